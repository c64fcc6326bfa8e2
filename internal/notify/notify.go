// Package notify runs keepalived's notify hooks on an instance's state changes:
// notify_master, notify_backup, notify_fault, notify_stop, then the generic notify with
// keepalived's four arguments (INSTANCE, the name, MASTER|BACKUP|FAULT|STOP, the
// priority). The hooks of one instance run one at a time, in transition order, each with
// a timeout; they run in a goroutine per instance behind a bounded queue, so a hanging
// script never blocks VRRP: when the queue is full the newest transition is dropped and
// counted.
package notify

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/proc"
)

// Hook is one hook: its command, the file that runs and the user it runs as, each hook
// its own, as in keepalived. An empty Args is no hook.
type Hook = proc.Command

// Scripts are one instance's hooks.
type Scripts struct {
	Master, Backup, Fault, Stop Hook
	// Generic is keepalived's notify: called on every transition with four more
	// arguments.
	Generic Hook
	// Deleted is notify_deleted's script (state Deleted).
	Deleted Hook
	// Kind is the first argument of Generic: Instance (when empty) or Group.
	Kind string
}

// Empty reports whether there is no hook at all.
func (s Scripts) Empty() bool {
	return s.Master.Empty() && s.Backup.Empty() && s.Fault.Empty() && s.Stop.Empty() && s.Generic.Empty() && s.Deleted.Empty()
}

// Hooks returns pointers to every hook, for a caller that resolves them in turn.
func (s *Scripts) Hooks() []*Hook {
	return []*Hook{&s.Master, &s.Backup, &s.Fault, &s.Stop, &s.Generic, &s.Deleted}
}

// The states a hook hears of, spelt as keepalived passes them.
const (
	Master = "MASTER"
	Backup = "BACKUP"
	Fault  = "FAULT"
	Stop   = "STOP"
	// Deleted: a reload removed the instance (notify_deleted).
	Deleted = "DELETED"
)

// The first argument of a generic hook and the first word of a FIFO line.
const (
	Instance = "INSTANCE"
	Group    = "GROUP"
)

// kind is s's first argument for Generic.
func (s Scripts) kind() string {
	if s.Kind == "" {
		return Instance
	}
	return s.Kind
}

// QueueLen bounds the transitions waiting for one instance's hooks.
const QueueLen = 32

// DefaultTimeout bounds one hook run when the caller gives none.
const DefaultTimeout = 30 * time.Second

type job struct {
	s        Scripts
	name     string
	state    string
	priority uint8
}

// Notifier runs the hooks. Notify never blocks; Close waits for the queues to drain.
type Notifier struct {
	timeout time.Duration
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc

	mu     sync.Mutex
	queues map[string]chan job
	wg     sync.WaitGroup
	closed bool

	dropped atomic.Uint64
	failed  atomic.Uint64
}

// New returns a Notifier whose hooks each run at most timeout (DefaultTimeout if zero).
func New(timeout time.Duration, log *slog.Logger) *Notifier {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{timeout: timeout, log: log, ctx: ctx, cancel: cancel, queues: map[string]chan job{}}
}

// Notify queues the hooks of instance name for its transition to state (Master, Backup,
// Fault or Stop) at priority. It returns at once.
func (n *Notifier) Notify(name string, s Scripts, state string, priority uint8) {
	if s.Empty() {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	key := s.kind() + " " + name // a group may share an instance's name
	q, ok := n.queues[key]
	if !ok {
		q = make(chan job, QueueLen)
		n.queues[key] = q
		n.wg.Go(func() { n.drain(q) })
	}
	select {
	case q <- job{s: s, name: name, state: state, priority: priority}:
	default:
		n.dropped.Add(1)
		n.log.Warn("("+name+") notify queue full; transition not notified", "state", state)
	}
}

// Forget ends instance name's queue once its queued hooks have run (its STOP hook
// included): an instance a reload removed keeps no goroutine. A later Notify for the name
// starts a new queue.
func (n *Notifier) Forget(name string) { n.forget(Instance + " " + name) }

// ForgetGroup is Forget for a sync group.
func (n *Notifier) ForgetGroup(name string) { n.forget(Group + " " + name) }

func (n *Notifier) forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q, ok := n.queues[key]; ok && !n.closed {
		close(q)
		delete(n.queues, key)
	}
}

// Dropped counts transitions whose hooks were not run because the queue was full; Failed
// counts hook runs that failed or timed out.
func (n *Notifier) Dropped() uint64 { return n.dropped.Load() }

// Failed counts hook runs that exited non-zero, could not start or timed out.
func (n *Notifier) Failed() uint64 { return n.failed.Load() }

func (n *Notifier) drain(q chan job) {
	for j := range q {
		if specific := j.s.forState(j.state); !specific.Empty() {
			n.run(j, specific)
		}
		if g := j.s.Generic; !g.Empty() {
			g.Args = append(append([]string(nil), g.Args...), j.s.kind(), j.name, j.state, strconv.Itoa(int(j.priority)))
			n.run(j, g)
		}
	}
}

func (s Scripts) forState(state string) Hook {
	switch state {
	case Master:
		return s.Master
	case Backup:
		return s.Backup
	case Fault:
		return s.Fault
	case Stop:
		return s.Stop
	case Deleted:
		return s.Deleted
	}
	return Hook{}
}

func (n *Notifier) run(j job, h Hook) {
	ok, timedOut, err := proc.Run(n.ctx, h, n.timeout)
	if ok {
		return
	}
	n.failed.Add(1)
	n.log.Warn("("+j.name+") notify script failed", "script", h.Args[0], "state", j.state, "timedOut", timedOut, "err", err)
}

// Close stops taking transitions and waits for the queued hooks to run, at most until
// ctx is done: then running hooks are killed and the rest dropped.
func (n *Notifier) Close(ctx context.Context) {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		for _, q := range n.queues {
			close(q)
		}
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
	}
	n.cancel()
}
