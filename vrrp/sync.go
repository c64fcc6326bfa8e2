package vrrp

import "time"

// ReasonSyncGroup is the reason of a transition a sync group imposes: another member
// faulted or left Master (keepalived's vrrp_sync_fault and vrrp_sync_backup).
const ReasonSyncGroup Reason = "sync group"

// StepDown makes a Master a Backup without advertising priority 0, as keepalived's
// vrrp_sync_backup does to the other members of a sync group when one of them leaves
// Master: the VIPs go and Master_Down_Timer starts. In any other state it does nothing.
func (i *Instance) StepDown(now time.Time, reason Reason, out []Action) []Action {
	if i.state != StateMaster {
		return out
	}
	out = i.leaveMaster(StateBackup, reason, false, out)
	return i.arm(TimerMasterDown, now.Add(i.MasterDownInterval()), out)
}
