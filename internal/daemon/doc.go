// Package daemon is vrrpd's runtime: the one loop that turns the sans-IO state machines of
// package vrrp into virtual routers on real sockets.
//
// A Daemon runs one set of instances, a config.Config: from a keepalived.conf or YAML file
// (cmd/vrrpd, reloaded on SIGHUP), or, in Kubernetes mode, translated from the
// KeepalivedGroups that select this node (internal/groupsource, which calls Reload on
// every change). It owns:
//
//   - one raw socket per interface and address family (internal/transport), shared by every
//     instance on it, each read by a goroutine that hands whole batches of packets to the loop;
//     a unicast instance gets its own socket, not joined to the group;
//   - one timer structure for every instance: a min-heap of deadlines under a single
//     timerfd (timerheap.go, ptimer.go) in the runtime's poller beside the sockets, read
//     by a timer goroutine of its own that runs the due timers itself, so a takeover's
//     advertisement leaves without a channel hop; it wakes a Master_Down_Timer early and
//     spins out the rest;
//   - the loop itself (daemon.go; packets in conn.go, actions in instance.go, announcements
//     in announce.go), which handles packets, reloads and interface events. The loop and
//     the timer thread are the only goroutines that touch instance state, one at a time
//     under the daemon's lock.
//
// What the loop does, each behaviour unit-tested in daemon_test.go:
//
//  1. election and takeover: a backup that hears no master for Master_Down_Interval
//     becomes master, adds its VIPs (with their device and label) and advertises every
//     interval; a backup follows the master it hears (TestElectionTakeover,
//     TestBackupFollowsMaster). The takeover's advertisement leaves first, before the
//     transition is logged or published and before any VIP is added, for every instance
//     taking over in one wake-up, so lower-priority backups hear it before their own
//     timers run out (TestTakeoverAdvertisesFirst, BenchmarkTakeoverAdvert); the timer
//     thread sends it once the deadline has passed, never before (TestRunTakeoverOnTime);
//  2. stepping down: a master preempted by a higher priority removes its VIPs and stops
//     its announcements (TestMasterStepsDown);
//  3. packet routing: each packet goes to its instance by (interface, family, VRID), with
//     errors counted on that instance or, without one, on the socket; unicast instances
//     hear only their peers (TestHandlePacketRouting, TestHandlePacketUnicastPeers,
//     TestBatchFromReader);
//  4. shared sockets: instances on one interface and family share a socket; unicast ones
//     get their own and send to each peer (TestSharedSockets);
//  5. advertisements in step: masters whose advertisements fall due within a tenth of an
//     interval send in one wake-up and line their deadlines up, so N masters cost one
//     wake-up per interval (TestAdvertsFallIntoStep), and their advertisements leave in
//     one sendmmsg per socket (sendbatch.go, TestAdvertsSentInOneBatch);
//  6. announcements: a new master announces all its addresses, each from its own device,
//     on keepalived's garp_* schedule (package garp), and a reload that adds VIPs to a
//     master restarts them (TestAnnouncements, TestReloadAddsVIPsToMaster);
//  7. excluded VIPs (virtual_ipaddress_excluded) come and go with mastership, never
//     advertised (TestExcludedVIPs);
//  8. fault: an interface that is down, without carrier, missing or without a source
//     address puts its instances in FAULT (a master sends priority 0 and drops its
//     addresses), and they start again when it is back; a changed source address is
//     taken up at once (TestFaultInterfaceDown, TestFaultInterfaceMissing,
//     TestSourceAddressChange). Netlink link and address events wake the check (a
//     subscription that ends wakes it too, for what it may have missed); a poll every ten
//     seconds is the safety net, every second while an interface is in trouble;
//  9. reload: unchanged instances keep their state, counters and VIPs; changed ones are
//     reconfigured in place when the state machine allows, else restarted; removed ones
//     resign; VIPs that change device or label are moved; an instance renamed on the
//     same interface, family and VRID is the same virtual router and keeps running
//     under its new name (TestReloadRenamesInstanceInPlace); an invalid configuration is
//     refused whole (TestReloadKeepsAndReconfigures, TestReloadRemovesAndRestarts,
//     TestReloadMovesVIP, TestReloadRefusesInvalid);
//  10. start-up recovery: the VIPs a crashed run recorded are removed before any instance
//     starts (TestStartupRecovery);
//  11. shutdown: every master removes its VIPs and then sends priority 0 (a chosen
//     resignation breaks before it makes, as a reload's removal does: TestResignBreaksFirst), and every socket and
//     announcer is closed (TestShutdown, TestRun);
//  12. ownership: a VIP on the interface before the instance became master is served but
//     never taken or removed, a VIP two instances share stays until the last lets go, and a
//     VIP someone takes off a master's interface is put back at the next interface check
//     (TestPreexistingVIPLeftAlone, TestSharedVIPHeldUntilLastLetsGo,
//     TestFlushedVIPReadded);
//  13. snapshot: the state, priority, master and counters of every instance are published
//     for metrics and `vrrpd status`, state changes at once and counters at most every
//     half a second, so readers never touch the loop (TestCountersPublished).
//  14. second holders: each publication after a transition or reload hands the masters'
//     VIPs to the conflict detector (package conflict, its own goroutine and sockets),
//     and nothing else does, so the loop pays one list per change and no probe ever waits
//     for it (TestHeldVIPsHandedToConflicts); a conflict's end, the other host silent,
//     makes a master still holding the VIP announce it once (TestAnnounceAgainWhenConflictEnds).
//
// The loop reaches the host only through four small interfaces defined here (host.go),
// each the least it needs: vipStore (package vip's Manager, with its crash-safe record),
// announcers (package garp's Announcers, one per interface), socket (internal/transport's
// Conn, opened through openSocket) and links (link state and change events, on netlink).
// New wires the real ones. The loop's functions take the time as an argument, so the tests
// replace the four with in-memory fakes (fake_test.go) and run it on a virtual clock,
// without root.
//
// Receiving allocates nothing per packet: batches are recycled between reader and loop, the
// decoder reuses one Advertisement, and actions are appended to one reused slice.
package daemon
