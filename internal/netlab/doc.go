// Package netlab builds throw-away Ethernet segments out of Linux network
// namespaces for tests and demos: one bridge (in a namespace of its own, so
// the machine running the tests never sees lab traffic) and N hosts, each a
// namespace with an "eth0" veth plugged into the bridge; or ([CreatePair]) two
// hosts whose eth0s are the ends of one veth pair, for CPU measurements that must
// not include a switch's work.
//
// Host i (counting from 0) gets 10.99.0.<10+i>/24 and fd00:99::<10+i>/64, with
// IPv6 duplicate address detection off so addresses work at once. Every name
// carries a random suffix, so labs of concurrent test runs never collide.
//
// Programs (the demo) call [Create] and [Lab.Close]; tests call netlabtest.New,
// which ties a lab to the test. The package never imports testing, so the demo
// does not link it.
// Everything needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's ip.
package netlab
