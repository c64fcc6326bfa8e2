// Package pcapfile reads packet captures: classic libpcap files (microsecond and nanosecond
// timestamps, either byte order) and pcapng files (section header, interface description,
// enhanced and simple packet blocks; every other block is skipped).
//
// It exists so that the project's golden tests and fuzz seeds can use real captures
// (keepalived's advertisements, gratuitous ARPs, neighbour advertisements) without a cgo
// libpcap. It reads only; it does not write captures.
//
// Besides the reader, ParseIP opens the IPv4 or IPv6 packet inside an Ethernet frame, which
// is all the captures of this project need.
package pcapfile
