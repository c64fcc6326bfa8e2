// Package keyword is keepalived's keyword table: one entry per keyword vrrpd knows, as
// keepalived registers each once (install_keyword("priority", &vrrp_prio_handler)).
// An entry says how the keyword's value is read and checked (the one range check and
// message of every format), where the value lands in an instance or the global settings,
// its key in vrrpd's YAML schema, who may set it from Kubernetes (a Service, the
// operator, nobody), and, for a keyword vrrpd reads without acting on it, what happens
// instead.
//
// Its readers: internal/config's two file formats (keepalived.conf through
// Draft.SetKeyword and Globals.SetKeyword, YAML by the keys of the entries), its
// warnings about unsupported keywords; api/v1alpha1's verbatim contract, which the
// operator checks a Service's annotation against (controller/annotations.go); and vrrpd's
// Kubernetes mode (internal/groupsource), which applies what a Service may set through
// the same Draft.SetKeyword.
//
// Why a package of its own, at the bottom of the import graph: api/v1alpha1 must read
// the table, and api must not import internal/config, which is vrrpd's layer (it links
// the protocol core, garp, netlink routes and the script runner into everything that
// imports it, the operator and every client of the API included). So the table and its
// value readers import the standard library only, and config, api and the rest import it.
package keyword
