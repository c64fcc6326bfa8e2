// Command demo shows vrrpd at work on this machine, in network namespaces: a bridge and
// three hosts (h1, h2, client); vrrpd in h1 (priority 150) and h2 (priority 100) elect a
// master for 10.99.0.100/24 and fd00:99::100/64; the client reaches the VIPs; h1's link
// is cut and the VIPs move to h2, the client's neighbour entries following by gratuitous
// ARP and unsolicited neighbour advertisement; h1 comes back and preempts; a SIGTERM to
// h1 hands the VIPs over gracefully. Every step is checked, so the demo doubles as an
// end-to-end test: it exits 1 if any step fails, 130 if interrupted, and tears the lab
// down in every case (unless --keep, which leaves it up for a look around).
//
//	demo [--vrrpd PATH] [--adverts 100ms] [--pause 1s] [--keep]
//
// It needs root (network namespaces) and iproute2's ip command, and checks both before it
// starts, naming what to install; the client's pings are ICMP echoes sent from Go, so no
// ping command is needed. Without --vrrpd it builds cmd/vrrpd with the go command, so run
// it from the repository (`make demo` does both). Only 10.99.0.0/24 and fd00:99::/64 are used, inside the lab's
// own namespaces.
package main
