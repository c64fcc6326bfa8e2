package sharing

// PlanCached is Plan whose routers' priorities come from cached when it
// has them: cached(key) returns the priorities a router of that key got
// from an earlier plan over the same nodes, or nil; keep(key, priorities)
// is told each router's priorities. Either may be nil.
//
// A router's priorities depend only on its key (its class and exact ranks
// or bucket are in it) and the nodes, so while the nodes stay the same a
// caller may keep them from one plan to the next: at 500 nodes, ranking
// every node for each of a group's 64 routers was a tenth of the operator's
// CPU while 10,000 Services arrived (BenchmarkConvergence10000SharedServices),
// though an arriving Service changes no router's priorities.
func PlanCached(nodes []string, services []Service, budget int, cached func(key string) []uint8, keep func(key string, priorities []uint8)) Result {
	return plan(nodes, services, budget, func(key string, exact []int) []uint8 {
		if cached != nil {
			if pr := cached(key); len(pr) == len(nodes) {
				if keep != nil {
					keep(key, pr)
				}
				return pr
			}
		}
		pr := priorities(key, exact, nodes)
		if keep != nil {
			keep(key, pr)
		}
		return pr
	})
}
