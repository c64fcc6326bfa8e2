// Package vrid assigns VRRP virtual router IDs (1..255) to the instances of a
// KeepalivedGroup.
//
// Instance keys are "namespace/name" (one instance per Service) or
// "namespace/name/ip" (one per VIP, with spreadvips). Assign is a pure
// function of the current keys, the assignments already published in the
// group's status, and a predicate telling which IDs may not be used; it
// follows the rules every node relies on:
//
//   - an instance keeps its ID as long as it exists, so VRRP peers never see
//     a live instance change identity;
//   - an ID that became reserved (listed in blacklistRouterIDs, or used by
//     another group on the same segment: the caller decides) is taken away
//     and its instance gets a new one;
//   - instances without an ID get the lowest free ID, in sorted key order;
//   - when the 255 IDs run out, the remaining instances, in sorted key
//     order, are reported as left out; nothing is dropped silently;
//   - the same inputs always give the same result, and removed keys free
//     their IDs for later instances.
package vrid
