package readbeforewrite_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/internal/textfile"
	"github.com/dsh-go/harness/services/fs"
	"github.com/dsh-go/harness/services/fslocal"
	"github.com/dsh-go/harness/services/readbeforewrite"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
	"github.com/dsh-go/harness/services/tool"
	"github.com/dsh-go/harness/services/toolfs"
)

var (
	bg   = context.Background()
	tgtA = fs.Target{Key: "/w/a.txt", DisplayPath: "/w/a.txt"}
	tgtB = fs.Target{Key: "/w/b.txt", DisplayPath: "/w/b.txt"}
)

func present(v fs.Version) fs.Observation { return fs.Observation{Kind: fs.Present, Version: v} }

var absent = fs.Observation{Kind: fs.Absent}

// want is what the policy answers for one session and target.
type want struct {
	intent  fs.WriteIntent
	guard   fs.Observation
	code    fs.Code // the edit refusal's code, "" for none
	message string  // the edit refusal's exact message
}

func unseen(dp string) want {
	return want{intent: fs.CreateOnly(), code: fs.CodeNotObserved, message: `edit requires reading "` + dp + `" first`}
}

func gone(dp string) want {
	return want{intent: fs.CreateOnly(), code: fs.CodeNotFound, message: `cannot edit "` + dp + `": not found`}
}

func at(v fs.Version) want {
	return want{intent: fs.ReplaceSeen(fs.Observation{Version: v}), guard: present(v)}
}

// seen is the answer after obs, a present observation.
func seen(obs fs.Observation) want { return want{intent: fs.ReplaceSeen(obs), guard: obs} }

// read is a whole-file read's observation of version v: with content.
func read(v fs.Version) fs.Observation {
	return fs.Observation{Kind: fs.Present, Version: v, Content: fs.Fingerprint{Size: 6, Hash: "h-" + fs.ContentHash(v)}}
}

// expect asserts both intent slots of p for sess and target.
func expect(t *testing.T, p *readbeforewrite.Policy, sess *session.Session, target fs.Target, w want) {
	t.Helper()
	intent, err := p.WriteIntent(bg, sess.Owner(), target)
	require.NoError(t, err, "a write intent is never refused")
	assert.Equal(t, w.intent, intent, "write intent")
	guard, err := p.EditGuard(bg, sess.Owner(), target)
	if w.code == "" {
		require.NoError(t, err)
		assert.Equal(t, w.guard, guard, "edit guard")
		return
	}
	require.Error(t, err)
	var fe *fs.Error
	require.ErrorAs(t, err, &fe)
	assert.EqualValues(t, w.code, fe.Code)
	assert.Equal(t, w.message, fe.Error())
	assert.Equal(t, target.DisplayPath, fe.Path)
	assert.Zero(t, guard)
}

// TestPolicy covers O-02..O-09, O-13, O-15 and O-16 directly on the policy:
// each case records observations, then checks both intent slots.
func TestPolicy(t *testing.T) {
	type step struct {
		sess   int // index into the case's sessions; -1 for no session
		target fs.Target
		obs    fs.Observation
	}
	type check struct {
		sess   int
		target fs.Target
		want   want
	}
	tests := []struct {
		name     string
		sessions int
		steps    []step
		checks   []check
	}{
		{
			name: "O-02 unseen: createIfAbsent; O-04 edit requires a read", sessions: 1,
			checks: []check{{0, tgtA, unseen("/w/a.txt")}},
		},
		{
			name: "O-02 no owner: createIfAbsent; O-04 edit requires a read", sessions: 0,
			checks: []check{{-1, tgtA, unseen("/w/a.txt")}},
		},
		{
			name: "O-03 present(v7): replaceIfVersion v7; O-05 guard v7", sessions: 1,
			steps:  []step{{0, tgtA, present("v7")}},
			checks: []check{{0, tgtA, at("v7")}},
		},
		{
			name: "difference 14 a whole-file read's content goes to both slots with its version", sessions: 1,
			steps:  []step{{0, tgtA, read("v7")}},
			checks: []check{{0, tgtA, seen(read("v7"))}},
		},
		{
			name: "difference 14 a later write's observation (a version, no content) replaces the read's", sessions: 1,
			steps:  []step{{0, tgtA, read("v1")}, {0, tgtA, present("v2")}},
			checks: []check{{0, tgtA, at("v2")}},
		},
		{
			name: "O-03 absent: createIfAbsent; O-05 edit is FS_NOT_FOUND", sessions: 1,
			steps:  []step{{0, tgtA, absent}},
			checks: []check{{0, tgtA, gone("/w/a.txt")}},
		},
		{
			name: "O-06 observations from writes and edits refresh the basis (v1 then v2)", sessions: 1,
			steps:  []step{{0, tgtA, present("v1")}, {0, tgtA, present("v2")}},
			checks: []check{{0, tgtA, at("v2")}},
		},
		{
			name: "O-07 an observation with no owner records nothing", sessions: 1,
			steps:  []step{{-1, tgtA, present("v1")}},
			checks: []check{{-1, tgtA, unseen("/w/a.txt")}, {0, tgtA, unseen("/w/a.txt")}},
		},
		{
			name: "O-08 present -> absent", sessions: 1,
			steps:  []step{{0, tgtA, present("v1")}, {0, tgtA, absent}},
			checks: []check{{0, tgtA, gone("/w/a.txt")}},
		},
		{
			name: "O-08 present -> absent -> present", sessions: 1,
			steps:  []step{{0, tgtA, present("v1")}, {0, tgtA, absent}, {0, tgtA, present("v3")}},
			checks: []check{{0, tgtA, at("v3")}},
		},
		{
			name: "O-09 owner A's observation grants nothing to owner B", sessions: 2,
			steps:  []step{{0, tgtA, present("v1")}},
			checks: []check{{0, tgtA, at("v1")}, {1, tgtA, unseen("/w/a.txt")}},
		},
		{
			name: "O-09 versions are tracked independently per owner", sessions: 2,
			steps:  []step{{0, tgtA, present("v1")}, {1, tgtA, present("v2")}, {1, tgtB, absent}},
			checks: []check{{0, tgtA, at("v1")}, {1, tgtA, at("v2")}, {0, tgtB, unseen("/w/b.txt")}, {1, tgtB, gone("/w/b.txt")}},
		},
		{
			name: "O-09 targets are tracked independently", sessions: 1,
			steps:  []step{{0, tgtA, present("v1")}},
			checks: []check{{0, tgtA, at("v1")}, {0, tgtB, unseen("/w/b.txt")}},
		},
		{
			name: "records are keyed by target key: another display path of the same key shares them", sessions: 1,
			steps: []step{{0, fs.Target{Key: "/real/a.txt", DisplayPath: "/link/a.txt"}, present("v1")}},
			checks: []check{
				{0, fs.Target{Key: "/real/a.txt", DisplayPath: "/real/a.txt"}, at("v1")},
				{0, fs.Target{Key: "/link/a.txt", DisplayPath: "/link/a.txt"}, unseen("/link/a.txt")},
			},
		},
		{
			name: "O-13 the last recorded observation wins, even an older version (T-82)", sessions: 1,
			steps:  []step{{0, tgtA, present("v1")}, {0, tgtA, present("v2")}, {0, tgtA, present("v1")}},
			checks: []check{{0, tgtA, at("v1")}},
		},
		{
			name: "O-16 a non-agent caller never overwrites: createIfAbsent whatever sessions saw", sessions: 2,
			steps:  []step{{0, tgtA, present("v1")}, {1, tgtA, present("v1")}, {-1, tgtA, present("v1")}},
			checks: []check{{-1, tgtA, unseen("/w/a.txt")}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := readbeforewrite.New()
			sessions := make([]*session.Session, tc.sessions)
			for i := range sessions {
				sessions[i] = session.New("s"+string(rune('A'+i)), "/w")
			}
			pick := func(i int) *session.Session {
				if i < 0 {
					return nil
				}
				return sessions[i]
			}
			for _, s := range tc.steps {
				require.NoError(t, p.Observe(pick(s.sess).Owner(), s.target, s.obs), "O-13 Observe never fails")
			}
			for _, c := range tc.checks {
				expect(t, p, pick(c.sess), c.target, c.want)
			}
			runtime.KeepAlive(sessions)
		})
	}
}

// TestPolicyBookkeeping covers the contract beside the intent answers:
// synchronous recording, resumption, the number of sessions held, and
// concurrent use.
func TestPolicyBookkeeping(t *testing.T) {
	t.Run("O-13 Observe is synchronous: the record is there when it returns", func(t *testing.T) {
		p := readbeforewrite.New()
		s := session.New("s", "/w")
		require.NoError(t, p.Observe(s.Owner(), tgtA, present("v1")))
		expect(t, p, s, tgtA, at("v1"))
	})

	t.Run("O-15 a resumed session (recreated from its events) starts with no observations", func(t *testing.T) {
		p := readbeforewrite.New()
		orig := session.New("s", "/w", session.Event{Type: "chat/message", Data: "hi"})
		require.NoError(t, p.Observe(orig.Owner(), tgtA, present("v1")))
		resumed := session.New(orig.ID(), orig.Cwd(), orig.Events()...)
		expect(t, p, resumed, tgtA, unseen("/w/a.txt"))
		expect(t, p, orig, tgtA, at("v1"))
	})

	t.Run("Sessions counts owners with records; a nil owner adds none", func(t *testing.T) {
		p := readbeforewrite.New()
		assert.Equal(t, 0, p.Sessions())
		a, b := session.New("a", "/w"), session.New("b", "/w")
		require.NoError(t, p.Observe(nil, tgtA, present("v1")))
		assert.Equal(t, 0, p.Sessions())
		require.NoError(t, p.Observe(a.Owner(), tgtA, present("v1")))
		require.NoError(t, p.Observe(a.Owner(), tgtB, absent))
		assert.Equal(t, 1, p.Sessions())
		require.NoError(t, p.Observe(b.Owner(), tgtA, present("v1")))
		assert.Equal(t, 2, p.Sessions())
		runtime.KeepAlive(a)
		runtime.KeepAlive(b)
	})

	t.Run("O-12 (JS: async rejection) Go: refusals are returned error values, never panics, and ignore the context", func(t *testing.T) {
		p := readbeforewrite.New()
		ctx, cancel := context.WithCancel(bg)
		cancel()
		assert.NotPanics(t, func() {
			_, err := p.EditGuard(ctx, nil, tgtA)
			assert.EqualValues(t, fs.CodeNotObserved, fs.CodeOf(err))
			intent, err := p.WriteIntent(ctx, nil, tgtA)
			assert.NoError(t, err)
			assert.Equal(t, fs.CreateOnly(), intent)
		})
	})

	t.Run("the policy is safe for concurrent use", func(t *testing.T) {
		p := readbeforewrite.New()
		sessions := []*session.Session{session.New("a", "/w"), session.New("b", "/w")}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				s := sessions[i%2]
				for j := range 200 {
					_ = p.Observe(s.Owner(), tgtA, present(fs.Version("v"+string(rune('0'+j%10)))))
					_, _ = p.WriteIntent(bg, s.Owner(), tgtA)
					_, _ = p.EditGuard(bg, s.Owner(), tgtA)
					_ = p.Sessions()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 2, p.Sessions())
		for _, s := range sessions {
			guard, err := p.EditGuard(bg, s.Owner(), tgtA)
			require.NoError(t, err)
			assert.Equal(t, fs.Version("v9"), guard.Version)
		}
	})
}

// observeThrowaway records an observation for a session that nothing else
// references once it returns.
//
//go:noinline
func observeThrowaway(t *testing.T, p *readbeforewrite.Policy, id string) {
	s := session.New(id, "/w")
	require.NoError(t, p.Observe(s.Owner(), tgtA, present("v1")))
	require.NoError(t, p.Observe(s.Owner(), tgtB, absent))
}

// TestPolicyForgetsCollectedSessions: the records of a session go when the
// session is garbage collected (weak ownership, as the original's WeakMap).
func TestPolicyForgetsCollectedSessions(t *testing.T) {
	p := readbeforewrite.New()
	kept := session.New("kept", "/w")
	require.NoError(t, p.Observe(kept.Owner(), tgtA, present("v1")))
	observeThrowaway(t, p, "gone-1")
	observeThrowaway(t, p, "gone-2")
	require.Equal(t, 3, p.Sessions())

	assert.Eventually(t, func() bool {
		runtime.GC()
		return p.Sessions() == 1
	}, 2*time.Second, 10*time.Millisecond, "the collected sessions' records are dropped")
	expect(t, p, kept, tgtA, at("v1"))
	runtime.KeepAlive(kept) // the last use: from here on the kept session is unreachable too

	assert.Eventually(t, func() bool {
		runtime.GC()
		return p.Sessions() == 0
	}, 2*time.Second, 10*time.Millisecond, "records of every collected session are dropped")
}

// collected is what an fx app hands out: the intent policy and the
// observers of the fs.observers group.
type collected struct {
	intents   fs.IntentPolicy
	observers []fs.Observer
}

func startModule(t *testing.T, opts ...fx.Option) (*collected, *fxtest.App) {
	t.Helper()
	c := &collected{}
	app := fxtest.New(t, append([]fx.Option{
		fx.NopLogger,
		readbeforewrite.Module,
		fx.Invoke(fx.Annotate(func(ip fs.IntentPolicy, obs []fs.Observer) {
			c.intents, c.observers = ip, obs
		}, fx.ParamTags(``, `group:"fs.observers"`))),
	}, opts...)...)
	app.RequireStart()
	return c, app
}

// TestModule covers O-01, O-10 and O-11 through fx.
func TestModule(t *testing.T) {
	t.Run("O-01 the module needs nothing and provides the policy as fs.IntentPolicy and one fs.observers member", func(t *testing.T) {
		c, app := startModule(t)
		defer app.RequireStop()
		require.NotNil(t, c.intents)
		require.Len(t, c.observers, 1)
		p, ok := c.intents.(*readbeforewrite.Policy)
		require.True(t, ok)
		assert.Same(t, p, c.observers[0], "one policy answers intents and records observations")

		s := session.New("s", "/w")
		require.NoError(t, c.observers[0].Observe(s.Owner(), tgtA, present("v1")))
		guard, err := c.intents.EditGuard(bg, s.Owner(), tgtA)
		require.NoError(t, err)
		assert.Equal(t, fs.Version("v1"), guard.Version)
	})

	t.Run("O-10 (JS first-wins waterfall) Go: a composition holds one IntentPolicy; a second one fails the app", func(t *testing.T) {
		other := fx.Provide(func() fs.IntentPolicy { return readbeforewrite.New() })
		app := fx.New(fx.NopLogger, readbeforewrite.Module, other, fx.Invoke(func(fs.IntentPolicy) {}))
		require.Error(t, app.Err())
	})

	t.Run("O-10 the policy decides both slots itself: no state yields an unconditional write or an unguarded edit", func(t *testing.T) {
		c, app := startModule(t)
		defer app.RequireStop()
		s := session.New("s", "/w")
		for _, obs := range []*fs.Observation{nil, {Kind: fs.Absent}, {Kind: fs.Present, Version: "v1"}} {
			if obs != nil {
				require.NoError(t, c.observers[0].Observe(s.Owner(), tgtA, *obs))
			}
			for _, sess := range []*session.Session{s, nil} {
				intent, err := c.intents.WriteIntent(bg, sess.Owner(), tgtA)
				require.NoError(t, err)
				assert.NotEqual(t, fs.Unconditional, intent.Kind)
				guard, err := c.intents.EditGuard(bg, sess.Owner(), tgtA)
				assert.True(t, err != nil || guard.Version != "", "an edit is refused or guarded")
			}
		}
	})

	t.Run("O-11 stopping the app and starting another: the same owner is unseen by the fresh policy", func(t *testing.T) {
		s := session.New("s", "/w")
		first, app1 := startModule(t)
		require.NoError(t, first.observers[0].Observe(s.Owner(), tgtA, present("v1")))
		app1.RequireStop()

		second, app2 := startModule(t)
		defer app2.RequireStop()
		assert.NotSame(t, first.intents, second.intents)
		p, ok := second.intents.(*readbeforewrite.Policy)
		require.True(t, ok)
		expect(t, p, s, tgtA, unseen("/w/a.txt"))
		assert.Equal(t, 0, p.Sessions())
	})
}

// TestThroughTools covers O-11's "no policy" half, O-14 and O-16 through the
// real tools over fslocal.
func TestThroughTools(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	local, err := fslocal.New(fslocal.Config{Cwd: base}, nil)
	require.NoError(t, err)
	lines := ""
	for i := range 20 {
		lines += "line " + string(rune('a'+i)) + "\n"
	}
	call := func(t *testing.T, tl *tool.Tool, sess *session.Session, args string) tool.Result {
		t.Helper()
		return tl.Handler(session.NewContext(bg, sess), tool.Call{Arguments: []byte(args)})
	}

	t.Run("O-14 a windowed read observes the whole-file version", func(t *testing.T) {
		p := filepath.Join(base, "window.txt")
		require.NoError(t, os.WriteFile(p, []byte(lines), 0o644))
		policy := readbeforewrite.New()
		tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: local, Intents: policy, Observers: []fs.Observer{policy}})
		require.NoError(t, err)
		sess := session.New("s", base)
		res := call(t, tools.Read(), sess, `{"file_path":"window.txt","offset":3,"limit":2}`)
		require.False(t, res.IsError, res.Text)

		target, err := local.Resolve(bg, p, fs.ResolveOptions{})
		require.NoError(t, err)
		info, err := local.Stat(bg, target)
		require.NoError(t, err)
		guard, err := policy.EditGuard(bg, sess.Owner(), target)
		require.NoError(t, err)
		assert.Equal(t, info.Version, guard.Version)
		if guard.Content.Known() {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			h := textfile.NewTextHash()
			h.Write(string(raw))
			assert.Equal(t, fs.Fingerprint{Size: info.Size, Hash: fs.ContentHash(h.Sum())}, guard.Content,
				"a window's fingerprint, when it has one, is its whole file's (spec difference 14)")
		}
	})

	t.Run("O-16 a non-agent caller cannot overwrite an existing file through the gate, even after its own read", func(t *testing.T) {
		p := filepath.Join(base, "guarded.txt")
		require.NoError(t, os.WriteFile(p, []byte("keep"), 0o644))
		policy := readbeforewrite.New()
		tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: local, Intents: policy, Observers: []fs.Observer{policy}})
		require.NoError(t, err)
		require.False(t, call(t, tools.Read(), nil, `{"file_path":"guarded.txt"}`).IsError)
		res := call(t, tools.Write(), nil, `{"file_path":"guarded.txt","content":"clobber"}`)
		assert.True(t, res.IsError)
		assert.EqualValues(t, fs.CodeNotObserved, res.Code)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "keep", string(b))
		assert.Equal(t, 0, policy.Sessions())
	})

	t.Run("O-11 with no policy composed, writes are unconditional and edits unguarded", func(t *testing.T) {
		p := filepath.Join(base, "bare.txt")
		require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
		tools, err := toolfs.New(toolfs.Config{}, toolfs.Deps{FS: local})
		require.NoError(t, err)
		sess := session.New("s", base)
		require.False(t, call(t, tools.Write(), sess, `{"file_path":"bare.txt","content":"one"}`).IsError)
		require.False(t, call(t, tools.Edit(), sess, `{"file_path":"bare.txt","old_string":"one","new_string":"two"}`).IsError)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "two", string(b))
	})
}

// TestPolicyFollowsMoves checks what a fs.Moved observation does to the
// records: a record at the version that moved becomes the destination's at
// its new version; an older one stays stale; an unseen source leaves the
// destination unseen; records beneath a moved directory follow it; the
// source is absent afterwards.
func TestPolicyFollowsMoves(t *testing.T) {
	owner := sandbox.NewOwner("s1", "/w")
	dst := fs.Target{Key: "/w/b.txt", DisplayPath: "/w/b.txt"}
	cases := []struct {
		name    string
		seen    map[fs.TargetKey]fs.Version // present records before the move
		from    fs.TargetKey
		to      fs.Target
		wantOut fs.WriteIntent // the destination's write intent afterwards
	}{
		{
			name: "a record at the moved version follows at the new version", seen: map[fs.TargetKey]fs.Version{"/w/a.txt": "v1"},
			from: "/w/a.txt", to: dst, wantOut: fs.ReplaceSeen(fs.Observation{Version: "v2"}),
		},
		{
			name: "a record older than the moved version stays stale", seen: map[fs.TargetKey]fs.Version{"/w/a.txt": "v0"},
			from: "/w/a.txt", to: dst, wantOut: fs.ReplaceSeen(fs.Observation{Version: "v0"}),
		},
		{
			name: "an unseen source leaves the destination unseen", seen: map[fs.TargetKey]fs.Version{"/w/b.txt": "old"},
			from: "/w/a.txt", to: dst, wantOut: fs.CreateOnly(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := readbeforewrite.New()
			for k, v := range tc.seen {
				require.NoError(t, p.Observe(owner, fs.Target{Key: k, DisplayPath: string(k)}, fs.Observation{Kind: fs.Present, Version: v}))
			}
			require.NoError(t, p.Observe(owner, tc.to, fs.Observation{Kind: fs.Moved, From: tc.from, Prior: "v1", Version: "v2"}))
			got, err := p.WriteIntent(context.Background(), owner, tc.to)
			require.NoError(t, err)
			assert.Equal(t, tc.wantOut, got)
			_, err = p.EditGuard(context.Background(), owner, fs.Target{Key: tc.from, DisplayPath: string(tc.from)})
			assert.EqualValues(t, fs.CodeNotFound, fs.CodeOf(err), "the source is absent after the move")
		})
	}

	t.Run("records beneath a moved directory follow it", func(t *testing.T) {
		p := readbeforewrite.New()
		require.NoError(t, p.Observe(owner, fs.Target{Key: "/w/d/n.txt", DisplayPath: "/w/d/n.txt"}, fs.Observation{Kind: fs.Present, Version: "n1"}))
		require.NoError(t, p.Observe(owner, fs.Target{Key: "/w/e", DisplayPath: "/w/e"}, fs.Observation{Kind: fs.Moved, From: "/w/d", Prior: "d1", Version: "d2"}))
		v, err := p.EditGuard(context.Background(), owner, fs.Target{Key: "/w/e/n.txt", DisplayPath: "/w/e/n.txt"})
		require.NoError(t, err)
		assert.Equal(t, fs.Version("n1"), v.Version)
		_, err = p.EditGuard(context.Background(), owner, fs.Target{Key: "/w/d/n.txt", DisplayPath: "/w/d/n.txt"})
		assert.EqualValues(t, fs.CodeNotObserved, fs.CodeOf(err), "nothing is left under the old directory")
	})
}
