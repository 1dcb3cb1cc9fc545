package sandboxpolicy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/dsh-go/harness/services/invariants"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/sandboxpolicy"
	"github.com/dsh-go/harness/services/session"
)

const (
	policyPkg   = "github.com/dsh-go/harness/services/sandboxpolicy"
	hostRoot    = sandbox.Mode("host-root")
	hostRootMsg = `sandbox/mode carries unknown mode "host-root"`
)

// invariantsApp builds (does not start) an fx app with the invariants
// registry configured by cfg, the session tracker, the sandbox policy and
// its invariant companion; it returns the app, the tracker and the registry.
func invariantsApp(t *testing.T, cfg invariants.Config) (*fxtest.App, *session.Tracker, *invariants.Registry) {
	t.Helper()
	var (
		tracker  *session.Tracker
		registry *invariants.Registry
	)
	app := fxtest.New(t,
		fx.NopLogger,
		invariants.Module,
		fx.Supply(cfg),
		session.Module,
		sandboxpolicy.Module,
		invariants.Companion(sandboxpolicyPkg, sandboxpolicy.Invariants),
		fx.Populate(&tracker, &registry),
	)
	require.NotNil(t, tracker)
	require.NotNil(t, registry)
	return app, tracker, registry
}

// startedTracker starts an invariants app with checking enabled and returns
// its tracker; the app is stopped at the end of the test.
func startedTracker(t *testing.T) *session.Tracker {
	t.Helper()
	app, tracker, _ := invariantsApp(t, invariants.Config{Enabled: true})
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return tracker
}

// requireModeViolation asserts err is the sandbox policy's violation with
// message.
func requireModeViolation(t *testing.T, err error, message string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, invariants.ErrInvariant)
	var ie *invariants.Error
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, policyPkg, ie.Package)
	assert.Equal(t, sandboxpolicyPkg, ie.Package)
	assert.EqualValues(t, "INVARIANT", ie.Code)
	assert.Equal(t, message, ie.Message)
	assert.Equal(t, `invariant violated by "github.com/dsh-go/harness/services/sandboxpolicy": `+message, err.Error())
}

func modeEvent(m sandbox.Mode) session.Event {
	return session.Event{Type: sandboxpolicy.EventMode, Data: sandboxpolicy.ModeEvent{Mode: m}}
}

func TestInvariantsAcceptsValidModes(t *testing.T) {
	tracker := startedTracker(t)
	s := tracker.Start("s", "/ws")

	for _, m := range sandbox.Modes() {
		t.Run("P-20 SetMode "+string(m)+" on a tracked session is accepted", func(t *testing.T) {
			require.NoError(t, sandboxpolicy.SetMode(s, m))
			assert.Equal(t, modeEvent(m), s.Events()[len(s.Events())-1])
		})
	}

	t.Run("P-20 a pointer payload with a known mode is accepted", func(t *testing.T) {
		require.NoError(t, s.Append(session.Event{Type: sandboxpolicy.EventMode, Data: &sandboxpolicy.ModeEvent{Mode: ww}}))
	})

	t.Run("P-20 unrelated events are ignored, whatever their payload", func(t *testing.T) {
		for _, e := range []session.Event{
			{Type: "chat/message", Data: "host-root"},
			{Type: "chat/message", Data: sandboxpolicy.ModeEvent{Mode: hostRoot}},
			{Type: "sandbox/mode-request", Data: sandboxpolicy.ModeEvent{Mode: hostRoot}},
			{Type: "Sandbox/Mode", Data: sandboxpolicy.ModeEvent{Mode: hostRoot}},
			{Type: "", Data: nil},
		} {
			require.NoError(t, s.Append(e), "%+v", e)
		}
	})
}

func TestInvariantsRejectsUnknownModes(t *testing.T) {
	tracker := startedTracker(t)
	s := tracker.Start("s", "/ws", modeEvent(ww))

	t.Run("P-20 SetMode host-root on a tracked session returns the violation; the event is still recorded", func(t *testing.T) {
		err := sandboxpolicy.SetMode(s, hostRoot)
		requireModeViolation(t, err, hostRootMsg)
		assert.Equal(t, `invariant violated by "github.com/dsh-go/harness/services/sandboxpolicy": sandbox/mode carries unknown mode "host-root"`, err.Error())
		events := s.Events()
		require.Len(t, events, 2)
		assert.Equal(t, modeEvent(hostRoot), events[1])
	})

	t.Run("P-20 the check stays installed: a valid mode afterwards passes, an unknown one fails again", func(t *testing.T) {
		require.NoError(t, sandboxpolicy.SetMode(s, ro))
		requireModeViolation(t, sandboxpolicy.SetMode(s, "yolo"), `sandbox/mode carries unknown mode "yolo"`)
	})

	tests := []struct {
		name string
		mode sandbox.Mode
		want string
	}{
		{name: "P-20 the empty mode", mode: "", want: `sandbox/mode carries unknown mode ""`},
		{name: "P-20 modes are case-sensitive", mode: "Read-Only", want: `sandbox/mode carries unknown mode "Read-Only"`},
		{name: "P-20 a padded mode", mode: " read-only", want: `sandbox/mode carries unknown mode " read-only"`},
		{name: "P-20 the mode is JSON-quoted (quotes and backslashes escaped)", mode: `a"b\c`, want: `sandbox/mode carries unknown mode "a\"b\\c"`},
		{name: "P-20 the mode is JSON-quoted (& < > left as they are)", mode: "<&>", want: `sandbox/mode carries unknown mode "<&>"`},
		{name: "P-20 the mode is JSON-quoted (a newline is \\n)", mode: "a\nb", want: `sandbox/mode carries unknown mode "a\nb"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireModeViolation(t, sandboxpolicy.SetMode(s, tc.mode), tc.want)
		})
	}

	t.Run("P-20 a nil pointer payload carries the empty mode", func(t *testing.T) {
		err := s.Append(session.Event{Type: sandboxpolicy.EventMode, Data: (*sandboxpolicy.ModeEvent)(nil)})
		requireModeViolation(t, err, `sandbox/mode carries unknown mode ""`)
	})

	t.Run("P-20 a sandbox/mode event whose payload is not a ModeEvent is a violation", func(t *testing.T) {
		for _, data := range []any{"read-only", nil, map[string]any{"mode": "read-only"}} {
			err := s.Append(session.Event{Type: sandboxpolicy.EventMode, Data: data})
			require.ErrorIs(t, err, invariants.ErrInvariant, "%#v", data)
			var ie *invariants.Error
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, policyPkg, ie.Package)
			assert.Contains(t, ie.Message, "sandbox/mode")
		}
	})

	t.Run("P-20 every tracked session is checked, including one started later", func(t *testing.T) {
		other := tracker.Start("other", "/elsewhere")
		requireModeViolation(t, sandboxpolicy.SetMode(other, hostRoot), hostRootMsg)
		require.NoError(t, sandboxpolicy.SetMode(other, danger))
	})

	t.Run("P-20 a session the tracker has ended is still checked (its events still reach the tracker's observers)", func(t *testing.T) {
		ended := tracker.Start("ended", "/ws")
		tracker.End(ended)
		requireModeViolation(t, sandboxpolicy.SetMode(ended, hostRoot), hostRootMsg)
	})

	t.Run("P-20 a session NOT started by the tracker (session.New) is not observed: SetMode host-root returns nil", func(t *testing.T) {
		untracked := session.New("untracked", "/ws")
		require.NoError(t, sandboxpolicy.SetMode(untracked, hostRoot))
		assert.Equal(t, []session.Event{modeEvent(hostRoot)}, untracked.Events())
	})
}

func TestInvariantsChecksLiveSessionsAtStart(t *testing.T) {
	t.Run("P-20 an unknown mode already in a live session when the app starts rejects the registration and fails Start", func(t *testing.T) {
		app, tracker, registry := invariantsApp(t, invariants.Config{Enabled: true})
		tracker.Start("live", "/ws", session.Event{Type: sandboxpolicy.EventMode, Data: sandboxpolicy.ModeEvent{Mode: "host-root"}})

		err := app.Start(context.Background())
		require.Error(t, err)
		require.ErrorIs(t, err, invariants.ErrInvariant)
		var ie *invariants.Error
		require.ErrorAs(t, err, &ie)
		assert.EqualValues(t, "INVARIANT", ie.Code)
		assert.Equal(t, policyPkg, ie.Package)
		assert.Equal(t, hostRootMsg, ie.Message)
		assert.NotContains(t, registry.Registered(), policyPkg, "the rejected registration releases the name")

		later := tracker.Start("later", "/ws")
		require.NoError(t, sandboxpolicy.SetMode(later, hostRoot), "the rejected registration installed no observer")
	})

	t.Run("P-20 an unknown mode appended to a tracked session before the app starts fails Start", func(t *testing.T) {
		app, tracker, _ := invariantsApp(t, invariants.Config{Enabled: true})
		s := tracker.Start("live", "/ws")
		require.NoError(t, sandboxpolicy.SetMode(s, hostRoot), "not checked before start")
		require.NoError(t, sandboxpolicy.SetMode(s, ww))

		err := app.Start(context.Background())
		require.ErrorIs(t, err, invariants.ErrInvariant, "an unknown mode anywhere in the log rejects, even if a later event supersedes it")
		var ie *invariants.Error
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, hostRootMsg, ie.Message)
	})

	t.Run("P-20 live sessions with only known modes and unrelated events let the app start", func(t *testing.T) {
		app, tracker, registry := invariantsApp(t, invariants.Config{Enabled: true})
		tracker.Start("a", "/ws", modeEvent(ro), session.Event{Type: "chat/message", Data: "host-root"}, modeEvent(danger))
		tracker.Start("b", "/ws")
		app.RequireStart()
		defer app.RequireStop()
		assert.Equal(t, []string{policyPkg}, registry.Registered())
	})

	t.Run("P-20 a session the tracker has ended is not looked at on start", func(t *testing.T) {
		app, tracker, _ := invariantsApp(t, invariants.Config{Enabled: true})
		tracker.End(tracker.Start("ended", "/ws", modeEvent(hostRoot)))
		app.RequireStart()
		app.RequireStop()
	})

	t.Run("P-20 an unknown mode in a session NOT started by the tracker (session.New) is not looked at on start", func(t *testing.T) {
		app, _, _ := invariantsApp(t, invariants.Config{Enabled: true})
		_ = session.New("untracked", "/ws", modeEvent(hostRoot))
		app.RequireStart()
		app.RequireStop()
	})

	t.Run("P-20 with invariants disabled an unknown mode in a live session does not stop the app from starting", func(t *testing.T) {
		app, tracker, registry := invariantsApp(t, invariants.Config{Enabled: false})
		s := tracker.Start("live", "/ws", modeEvent(hostRoot))
		app.RequireStart()
		defer app.RequireStop()
		assert.Equal(t, []string{policyPkg}, registry.Registered(), "the name is reserved all the same")
		require.NoError(t, sandboxpolicy.SetMode(s, hostRoot), "nothing is installed")
	})

	t.Run("P-20 with the package blocked an unknown mode in a live session does not stop the app from starting", func(t *testing.T) {
		app, tracker, _ := invariantsApp(t, invariants.Config{Enabled: true, Block: []string{"sandboxpolicy"}})
		s := tracker.Start("live", "/ws", modeEvent(hostRoot))
		app.RequireStart()
		defer app.RequireStop()
		require.NoError(t, sandboxpolicy.SetMode(s, hostRoot))
	})
}

func TestInvariantsRemovedOnStop(t *testing.T) {
	t.Run("P-20 after stop the observer is removed and the name released", func(t *testing.T) {
		app, tracker, registry := invariantsApp(t, invariants.Config{Enabled: true})
		app.RequireStart()
		s := tracker.Start("s", "/ws")
		requireModeViolation(t, sandboxpolicy.SetMode(s, hostRoot), hostRootMsg)
		assert.Equal(t, []string{policyPkg}, registry.Registered())

		app.RequireStop()
		assert.Empty(t, registry.Registered())
		require.NoError(t, sandboxpolicy.SetMode(s, hostRoot), "no check runs after stop")
		require.NoError(t, sandboxpolicy.SetMode(tracker.Start("new", "/ws"), hostRoot))
	})

	t.Run("P-20 stopping one app and starting another checks afresh without leftovers", func(t *testing.T) {
		app1, tracker1, _ := invariantsApp(t, invariants.Config{Enabled: true})
		app1.RequireStart()
		s1 := tracker1.Start("s1", "/ws")
		app1.RequireStop()

		app2, tracker2, _ := invariantsApp(t, invariants.Config{Enabled: true})
		app2.RequireStart()
		defer app2.RequireStop()
		assert.NotSame(t, tracker1, tracker2, "each app has its own tracker")
		require.NoError(t, sandboxpolicy.SetMode(s1, hostRoot), "the first app's sessions are no longer checked")
		requireModeViolation(t, sandboxpolicy.SetMode(tracker2.Start("s2", "/ws"), hostRoot), hostRootMsg)
	})
}
