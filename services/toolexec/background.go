package toolexec

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-go/harness/services/errcode"
	"github.com/dsh-go/harness/services/exec"
	"github.com/dsh-go/harness/services/sandbox"
	"github.com/dsh-go/harness/services/session"
)

// Limits of background commands.
const (
	// MaxBackground is how many background commands one session may have
	// running at once; one more is refused with CodeBackgroundLimit.
	MaxBackground = 8
	// MaxEnded is how many ended background commands a session keeps
	// listed, with their end and output tails, for exec_output and
	// exec_kill; when one more ends, the oldest ended one is dropped.
	MaxEnded = 8
	// TailBytes is how many of the last bytes of each of stdout and
	// stderr an ended background command keeps once its output was read
	// (Job.StdoutTail, Job.StderrTail).
	TailBytes = 4 << 10
	// BackgroundOutputLimit is how many of the last bytes of each of
	// stdout and stderr a background command keeps until they are read;
	// older ones are dropped and counted.
	BackgroundOutputLimit = 1 << 20
	// KillGrace is how long exec_kill waits for a command to end after
	// its signal (SIGTERM by default) before it kills the whole tree.
	KillGrace = 5 * time.Second
)

// Codes of background-command results.
const (
	// CodeBackgroundLimit: the session already runs MaxBackground
	// background commands (or the server is stopping).
	CodeBackgroundLimit errcode.Code = "EXEC_BACKGROUND_LIMIT"
	// CodeUnknownID: no background command of this session has the id.
	CodeUnknownID errcode.Code = "EXEC_UNKNOWN_ID"
)

// The states of a background command.
const (
	stateRunning  = "running"
	stateExited   = "exited"
	stateKilled   = "killed"
	stateTimedOut = "timed_out"
	stateFailed   = "failed"
)

// job is one background command.
type job struct {
	id, command, workdir string
	principal            string       // whose call started it
	mode                 sandbox.Mode // the mode it runs under
	started              time.Time
	stdout, stderr       *ring
	signals              chan syscall.Signal
	cancel               context.CancelFunc
	done                 chan struct{} // closed when res and err are set
	res                  exec.Result
	err                  error
	// killedBy names the last signal exec_kill sent ("" for none): the
	// end it reports, since a sandboxed shell's end by a signal reaches
	// the runner as an exit code (128+N).
	killedBy atomic.Value
	// input is an interactive command's stdin or terminal (exec with
	// interactive or tty), nil for another; lastInput is when it last got
	// input (Unix nanoseconds), idled that it was ended for having none
	// for Config.InteractiveIdle.
	input     exec.Input
	lastInput atomic.Int64
	idled     atomic.Bool
	// req and conf judge an interactive command's output while it runs
	// (runningDenial): its request, and how the runner said it would be
	// confined (exec.Describer; nil when it cannot say or it is not
	// confined).
	req  exec.Request
	conf *exec.Confinement
}

// ended reports whether the command has ended.
func (j *job) ended() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// state names how the command stands; valid once ended() for the end.
func (j *job) state() string {
	switch {
	case !j.ended():
		return stateRunning
	case j.idledStarting():
		return stateTimedOut
	case j.err != nil:
		return stateFailed
	case j.res.TimedOut, j.idled.Load():
		return stateTimedOut
	case j.res.Signal != "" || j.res.Cancelled || j.killer() != "":
		return stateKilled
	}
	return stateExited
}

// idledStarting reports whether the idle limit ended j while it was still
// starting (a loaded machine): its start was cancelled by it, which is the
// idle end, not a failed start.
func (j *job) idledStarting() bool {
	return j.err != nil && j.idled.Load()
}

// killer is the last signal exec_kill sent to j, "" for none.
func (j *job) killer() string {
	s, _ := j.killedBy.Load().(string)
	return s
}

// jobs are the background commands of every session of one tool. Each runs
// on its own context, which ends when it is killed, when its session ends
// (session.Done) or when the tool is closed.
type jobs struct {
	runner exec.Runner
	idle   time.Duration   // Config.InteractiveIdle
	root   context.Context // cancelled by close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	bySess map[*session.Session]*sessionJobs
	wg     sync.WaitGroup // running commands and session watchers
}

// sessionJobs are one session's background commands, oldest first.
type sessionJobs struct {
	seq  int
	list []*job
}

func newJobs(r exec.Runner, idle time.Duration) *jobs {
	root, cancel := context.WithCancel(context.Background())
	return &jobs{runner: r, idle: idle, root: root, cancel: cancel, bySess: map[*session.Session]*sessionJobs{}}
}

// start runs req in the background for sess and returns its job at once;
// ended runs when the command has ended, before the job shows as ended.
// Errors: *limitError when sess has MaxBackground running, or the tool is
// closed.
func (m *jobs) start(sess *session.Session, principal string, req exec.Request, ended func()) (*job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &limitError{"the server is stopping; no background command starts"}
	}
	sj := m.bySess[sess]
	if sj == nil {
		sj = &sessionJobs{}
		m.bySess[sess] = sj
		m.wg.Add(1)
		go m.watch(sess)
	}
	running := 0
	for _, j := range sj.list {
		if !j.ended() {
			running++
		}
	}
	if running >= MaxBackground {
		return nil, &limitError{"this session already runs " + strconv.Itoa(MaxBackground) +
			" background commands, the most it may; end one with exec_kill first"}
	}
	sj.seq++
	// The session rides along (the runner keys the session's network
	// namespace by it), not the call's deadline: the command outlives the call.
	ctx, cancel := context.WithCancel(session.NewContext(m.root, sess))
	j := &job{
		id: "bg-" + strconv.Itoa(sj.seq), command: req.Command, workdir: req.Workdir, principal: principal, mode: modeOf(req), started: time.Now(),
		stdout: newRing(BackgroundOutputLimit), stderr: newRing(BackgroundOutputLimit),
		signals: make(chan syscall.Signal), cancel: cancel, done: make(chan struct{}),
	}
	req.Stdout, req.Stderr, req.Signals = j.stdout, j.stderr, j.signals
	if j.input = req.Input; j.input != nil {
		j.lastInput.Store(j.started.UnixNano())
		j.req = req
		if d, ok := m.runner.(exec.Describer); ok && req.Policy != nil {
			j.conf = d.Describe(*req.Policy)
		}
		if j.input.Terminal() {
			// One stream, kept as the text a model reads.
			req.Stdout = &termText{w: j.stdout}
		}
		m.wg.Add(1)
		go func() { defer m.wg.Done(); j.endIdle(m.idle) }()
	}
	sj.list = append(sj.list, j)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		j.res, j.err = m.runner.Run(ctx, req)
		if req.Input != nil {
			req.Input.Close()
		}
		ended()
		close(j.done)
		m.mu.Lock()
		m.dropEnded(sj)
		m.mu.Unlock()
	}()
	return j, nil
}

// endIdle ends j, an interactive command, once it has had no input for
// idle (Config.InteractiveIdle), or returns when it ends.
func (j *job) endIdle(idle time.Duration) {
	for {
		wait := idle - time.Since(time.Unix(0, j.lastInput.Load()))
		if wait <= 0 {
			j.idled.Store(true)
			j.killedBy.Store(unix.SignalName(syscall.SIGKILL))
			j.cancel()
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-j.done:
			t.Stop()
			return
		}
	}
}

// running returns the running background commands of every session by
// their principal (metrics, issue 39).
func (m *jobs) running() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for _, sj := range m.bySess {
		for _, j := range sj.list {
			if !j.ended() {
				out[j.principal]++
			}
		}
	}
	return out
}

// limitError refuses a background command (CodeBackgroundLimit).
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// watch ends sess's background commands when the session ends (never for a
// session no tracker started, nor for calls with none), or returns when the
// tool is closed.
func (m *jobs) watch(sess *session.Session) {
	defer m.wg.Done()
	select {
	case <-sess.Done():
	case <-m.root.Done():
		return
	}
	m.mu.Lock()
	sj := m.bySess[sess]
	delete(m.bySess, sess)
	m.mu.Unlock()
	for _, j := range sj.list {
		j.cancel()
	}
	for _, j := range sj.list {
		<-j.done
	}
}

// dropEnded drops the oldest ended commands of sj beyond MaxEnded. m.mu
// is held.
func (m *jobs) dropEnded(sj *sessionJobs) {
	ended := 0
	for _, j := range sj.list {
		if j.ended() {
			ended++
		}
	}
	for i := 0; ended > MaxEnded && i < len(sj.list); {
		if sj.list[i].ended() {
			sj.list = append(sj.list[:i], sj.list[i+1:]...)
			ended--
			continue
		}
		i++
	}
}

// find returns sess's job id, nil when there is none.
func (m *jobs) find(sess *session.Session, id string) *job {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sj := m.bySess[sess]; sj != nil {
		for _, j := range sj.list {
			if j.id == id {
				return j
			}
		}
	}
	return nil
}

// list returns sess's jobs, oldest first.
func (m *jobs) list(sess *session.Session) []*job {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sj := m.bySess[sess]; sj != nil {
		return append([]*job(nil), sj.list...)
	}
	return nil
}

// kill ends j: sig to every process of its tree first and, when sig is
// not SIGKILL and j has not ended within grace of the call (the runner takes
// signals once the command has started), the whole tree; it returns once j
// has ended.
func (j *job) kill(sig syscall.Signal, grace time.Duration) {
	if j.ended() {
		return
	}
	if sig != syscall.SIGKILL {
		j.killedBy.Store(unix.SignalName(sig))
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case j.signals <- sig:
			select {
			case <-j.done:
				return
			case <-t.C:
			}
		case <-j.done:
			return
		case <-t.C:
		}
	}
	j.killedBy.Store(unix.SignalName(syscall.SIGKILL))
	j.cancel()
	<-j.done
}

// close refuses new background commands, kills every running one and waits
// for them (and the session watchers) to end, or for ctx.
func (m *jobs) close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// modeOf is the mode req runs under ("" without a policy).
func modeOf(req exec.Request) sandbox.Mode {
	if req.Policy == nil {
		return ""
	}
	return req.Policy.Mode
}
