package vrrp

// State is the state of one virtual router. The numeric values are keepalived's, so the
// metrics that export a state as a number (keepalived_vrrp_state) read the same.
type State uint8

// The states of RFC 5798 §6.4 plus keepalived's FAULT.
const (
	// StateInit is RFC 5798's Initialize: configured but not running (before Start and
	// after Shutdown). No advertisements, no timer, no VIPs.
	StateInit State = 0
	// StateBackup monitors the master and takes over when its Master_Down_Timer fires.
	StateBackup State = 1
	// StateMaster holds the VIPs and advertises every Advertisement_Interval.
	StateMaster State = 2
	// StateFault is keepalived's FAULT: the interface is down or a tracker reports a
	// fault. The instance sends nothing, holds no VIPs, runs no timer and ignores
	// advertisements until the fault clears, when it starts again as from Initialize.
	StateFault State = 3
)

// String returns keepalived's name of the state: "INIT", "BACKUP", "MASTER" or "FAULT".
func (s State) String() string {
	switch s {
	case StateInit:
		return "INIT"
	case StateBackup:
		return "BACKUP"
	case StateMaster:
		return "MASTER"
	case StateFault:
		return "FAULT"
	}
	return "UNKNOWN"
}

// Reason says why a state changed. The values are constants so that reporting a transition
// allocates nothing; they are meant for logs and events as they are.
type Reason string

// Reasons for state changes chosen by the instance.
const (
	ReasonStartup         Reason = "startup"                                 // Init -> Backup
	ReasonAddressOwner    Reason = "address owner (priority 255)"            // Init -> Master
	ReasonMasterDown      Reason = "master down timer expired"               // Backup -> Master
	ReasonPreempted       Reason = "advertisement with higher priority"      // Master -> Backup
	ReasonHigherAddress   Reason = "equal priority from higher address"      // Master -> Backup
	ReasonShutdown        Reason = "shutdown"                                // any -> Init
	ReasonFaultCleared    Reason = "fault cleared"                           // Fault -> Backup/Master
	ReasonReconfigured    Reason = "reconfigured"                            // restart on a VRID/version/family change
	ReasonPriorityChanged Reason = "priority changed to address owner (255)" // Backup -> Master
)

// Reasons a caller may pass to SetFault; any other Reason value works too.
const (
	ReasonInterfaceDown Reason = "interface down"
	ReasonTrackFault    Reason = "tracked object in fault"
)

// TimerKind says which of the two RFC 5798 timers is running.
type TimerKind uint8

// The timers of RFC 5798 §6.2. Only one runs at a time: Adver_Timer in Master,
// Master_Down_Timer in Backup, neither in Init and Fault.
const (
	TimerNone       TimerKind = iota
	TimerAdvert               // Adver_Timer: send the next advertisement
	TimerMasterDown           // Master_Down_Timer: the master is presumed dead
)

// String names the timer as the RFC does.
func (k TimerKind) String() string {
	switch k {
	case TimerNone:
		return "none"
	case TimerAdvert:
		return "Adver_Timer"
	case TimerMasterDown:
		return "Master_Down_Timer"
	}
	return "unknown"
}
