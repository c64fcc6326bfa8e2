// Package holdings keeps the account of what vrrpd put into the kernel and must take out
// again: VIPs (package vip), routes and rules (internal/route). Two things answer for
// each entry, and this package is their one implementation:
//
//   - its holders ([Book]): the virtual routers that need it, so that an entry two
//     instances share leaves the kernel only when the last lets go. Only in memory:
//     after a crash every recorded entry goes, since the new daemon starts as a backup;
//   - the crash record ([Record]): a file in the state directory that lists an entry from
//     before it is added until after it is removed, so that a daemon started after a
//     kill -9 removes exactly what the dead one left, and nothing someone else added.
//
// It knows nothing of netlink: its users add and remove, and ask it what they own.
package holdings
