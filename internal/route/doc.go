// Package route adds and removes the routes and policy rules vrrpd owns (keepalived's
// virtual_routes, virtual_rules, static_routes and static_rules) through netlink, and
// remembers them across crashes the way package vip remembers addresses.
//
// A [Manager] owns only what it added. Before adding, it looks for the same route (family,
// table, destination and metric: what the kernel takes as one route) or the same rule;
// one already there is foreign: reported, never recorded, never removed, whoever put it
// there. What it adds it records first (routes.json in the state directory, written
// atomically), so that after a kill -9 the next daemon's [Manager.Recover] takes off
// exactly what the dead one left and nothing else. Entries are held per holder (a virtual
// router, or the static set) and leave the kernel when the last holder lets go: the
// holders and the record are internal/holdings', as package vip's are.
//
// Routes and rules are added with keepalived's protocol number (RTPROT_KEEPALIVED, 18)
// unless the configuration names another, so `ip route show proto 18` lists them and a
// removal never matches an operator's route of another protocol.
//
// A multipath route (keepalived's "via A or B", or its nexthop clauses) has its paths in
// Route.Nexthops and goes to the kernel as one route with RTA_MULTIPATH; its nexthops are
// part of its identity in the record and the holdings book.
//
// The state directory is shared with package vip, whose Manager locks it: a Manager of
// this package takes no lock of its own.
package route
