// Package sharing decides which Services of a KeepalivedGroup share one VRRP
// virtual router, so that a segment's 255 router IDs serve thousands of
// Services (issue 31; the design and its reasons are
// docs/design/router-sharing.md).
//
// A Service's VRRP behaviour is its priority vector: which node is master,
// which takes over next. Services of one class (ClassOf: the same verbatim
// settings, not externalTrafficPolicy Local) whose vectors agree in their
// exact ranks share a router:
//
//   - 2 exact ranks (master and first backup) while the group's n nodes make
//     at most budget pairs, n(n-1) <= budget;
//   - 1 (the master) while n <= budget;
//   - 0 beyond: members are hashed into budget buckets, each a router with its
//     own rendezvous vector.
//
// Below its exact ranks a router follows the rendezvous order of the other
// nodes under its own key, with placement's priorities. The exact ranks of a
// member come from placement (rendezvous hashing, or OrderService for the
// VIPs of a spreadvips Service), so its master is the node placement ranks
// first, and masters spread as placement spreads them.
//
// Plan is pure and deterministic. A member's router depends on its own key,
// class, addresses' sharing set, spreadvips siblings, the node set and the
// budget only: adding or removing a Service never moves another. On a node
// join or leave a member changes router only when its exact ranks change.
// It assigns no router IDs (internal/vrid does, on router keys) and knows
// nothing of the API.
package sharing
