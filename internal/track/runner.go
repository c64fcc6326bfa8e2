package track

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/proc"
)

// Script is one vrrp_script as the runner needs it.
type Script struct {
	Name string
	// Args is the command: the program (a path, or a name looked up in PATH) and its
	// arguments.
	Args []string
	// Path is the file to execute, as Resolve found and checked it; empty runs Args[0]
	// (a bare name looked up in the scripts' PATH).
	Path     string
	Interval time.Duration
	// Timeout bounds one run; zero means Interval (keepalived's default).
	Timeout  time.Duration
	Rise     int
	Fall     int
	InitFail bool
	// Cred is the user the script runs as; nil runs it as the daemon's own user.
	Cred *syscall.Credential
	// Check, when its Kind is not CheckNone, makes this a native check run in-process
	// instead of Args.
	Check Check
}

// Equal reports whether a and b run the same way, so a reload can keep a's state.
func (a Script) Equal(b Script) bool {
	return a.Name == b.Name && slices.Equal(a.Args, b.Args) && a.Path == b.Path && a.Interval == b.Interval &&
		a.Timeout == b.Timeout && a.Rise == b.Rise && a.Fall == b.Fall && a.InitFail == b.InitFail &&
		credEqual(a.Cred, b.Cred) && a.Check == b.Check
}

func credEqual(a, b *syscall.Credential) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Uid == b.Uid && a.Gid == b.Gid && slices.Equal(a.Groups, b.Groups)
}

// Event is one finished run of a script.
type Event struct {
	Script string
	// Gen identifies the runner's copy of the script: events of a copy a reload replaced
	// carry an older Gen than Runner.Gen returns, and the loop drops them.
	Gen uint64
	// OK is the run's verdict: exit status 0 (for a native check, its success).
	OK bool
	// TimedOut says the run was killed (its whole process group) after Timeout.
	TimedOut bool
	// Err says why a run failed without an exit status of its own (it could not start).
	Err error
	// Status is the script's status after this run, Changed whether the run changed it.
	Status  Status
	Changed bool
	Took    time.Duration
}

// Runner runs scripts, each in a goroutine of its own, and sends their results to a
// channel. It is not safe for concurrent use: the daemon's loop owns it. The goroutines
// only ever touch their own script and the channel.
type Runner struct {
	events  chan<- Event
	running map[string]*running
	gen     uint64
	admit   admission
}

type running struct {
	s      Script
	gen    uint64
	cancel context.CancelFunc
	done   chan struct{}
	admit  admission
}

// NewRunner returns a runner that sends every result to events. The receiver must keep
// reading: a script's goroutine waits for its result to be taken before its next run.
func NewRunner(events chan<- Event) *Runner {
	return &Runner{events: events, running: map[string]*running{}, admit: newAdmission(admitSlots())}
}

// admission bounds how many runs start at once. Without it, hundreds of trackers falling
// due together (every one at vrrpd's start, or those a host-wide stall made time out,
// whose next runs then start together again) are hundreds of runnable processes and
// connections at once: the scheduler shares the CPUs among them, vrrpd's own threads
// get one share among hundreds, adverts go late and runs that would take milliseconds
// alone time out (BenchmarkTrackedChecks255 measured both: on a 2-core virtual machine
// where /bin/true costs 2.5 ms of CPU, 255 at once timed out and moved VIPs). A run
// holds its slot until it ends or for admitHold, whichever comes first, so a script that
// hangs until its timeout delays the others by admitHold only. A run's timeout counts
// from its admission: the wait is vrrpd's, not the script's.
type admission chan struct{}

// admitHold is how long a run keeps its admission slot at most: far longer than a quick
// check takes (a few milliseconds), far shorter than any timeout (a second or more).
const admitHold = 50 * time.Millisecond

// admitSlots is the number of runs that may start at once: enough to keep every CPU
// busy with checks that wait on I/O, few enough that vrrpd's threads keep their share.
func admitSlots() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

func newAdmission(n int) admission { return make(admission, n) }

// enter waits for a slot, or for ctx; it returns the function that gives the slot back
// (at the latest admitHold later), or nil when ctx ended first.
func (a admission) enter(ctx context.Context) func() {
	select {
	case a <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	free := sync.OnceFunc(func() { <-a })
	t := time.AfterFunc(admitHold, free)
	return func() {
		t.Stop()
		free()
	}
}

// Set makes scripts the running set: a script already running with the same settings
// keeps running with its state; changed ones restart from init; others stop (their
// process groups killed).
func (r *Runner) Set(scripts []Script) {
	keep := map[string]bool{}
	for _, s := range scripts {
		keep[s.Name] = true
		if cur, ok := r.running[s.Name]; ok {
			if cur.s.Equal(s) {
				continue
			}
			cur.stop()
		}
		r.gen++
		ctx, cancel := context.WithCancel(context.Background())
		rs := &running{s: s, gen: r.gen, cancel: cancel, done: make(chan struct{}), admit: r.admit}
		r.running[s.Name] = rs
		go rs.loop(ctx, r.events)
	}
	for name, rs := range r.running {
		if !keep[name] {
			rs.stop()
			delete(r.running, name)
		}
	}
}

// Gen returns the generation of the running copy of name (0 for none): events with
// another Gen are stale.
func (r *Runner) Gen(name string) uint64 {
	if rs, ok := r.running[name]; ok {
		return rs.gen
	}
	return 0
}

// Stop stops every script and waits for their goroutines, their children killed.
func (r *Runner) Stop() {
	var wg sync.WaitGroup
	for name, rs := range r.running {
		wg.Go(rs.stop)
		delete(r.running, name)
	}
	wg.Wait()
}

func (rs *running) stop() {
	rs.cancel()
	<-rs.done
}

// loop runs the script every Interval (from when one run fell due to the next; a run
// longer than that is followed at once by the next), first at once as keepalived does,
// each once admitted (see admission).
// The second run comes phase(name) later than Interval, once: trackers started together
// (every one at vrrpd's start, hundreds with many instances) then run spread over the
// interval instead of in one burst of forks and connections a second, which on a small
// host made checks miss their timeouts and move VIPs (BenchmarkTrackedChecks255).
func (rs *running) loop(ctx context.Context, events chan<- Event) {
	defer close(rs.done)
	st := NewState(rs.s.Rise, rs.s.Fall, rs.s.InitFail)
	timeout := rs.s.Timeout
	if timeout <= 0 {
		timeout = rs.s.Interval
	}
	first := true
	for {
		start := time.Now()
		leave := rs.admit.enter(ctx)
		if leave == nil {
			return
		}
		ran := time.Now()
		ev := Event{Script: rs.s.Name, Gen: rs.gen}
		if rs.s.Check.Kind != CheckNone {
			ev.OK, ev.TimedOut, ev.Err = rs.s.Check.Run(ctx, timeout)
		} else {
			ev.OK, ev.TimedOut, ev.Err = proc.Run(ctx, proc.Command{Args: rs.s.Args, Path: rs.s.Path, Cred: rs.s.Cred}, timeout)
		}
		leave()
		if ctx.Err() != nil {
			return
		}
		ev.Took = time.Since(ran)
		ev.Changed = st.Observe(ev.OK)
		ev.Status = st.Status()
		select {
		case events <- ev:
		case <-ctx.Done():
			return
		}
		next := start.Add(rs.s.Interval)
		if first {
			next = next.Add(phase(rs.s.Name, rs.s.Interval))
			first = false
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// phase is a tracker's fixed offset within its interval, from its name (FNV-1a), so a
// restart or a reload spreads the same trackers the same way.
func phase(name string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return time.Duration(h % uint64(interval))
}
