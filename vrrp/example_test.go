package vrrp_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// A caller owns the clock and the I/O: it feeds inputs, carries out the actions in order,
// and calls HandleTimer when Deadline comes.
func ExampleInstance() {
	inst, err := vrrp.NewInstance(vrrp.Config{
		Name: "VI_1", VRID: 51, Version: vrrp.Version3, Priority: 150,
		AdvertInterval: time.Second, Preempt: true,
		VIPs:    []netip.Prefix{netip.MustParsePrefix("10.99.0.100/24")},
		Primary: netip.MustParseAddr("10.99.0.2"),
	})
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	show := func(acts []vrrp.Action) {
		for _, a := range acts {
			switch a.Kind {
			case vrrp.ActionStateChange:
				fmt.Printf("%v -> %v (%s)\n", a.From, a.To, a.Reason)
			case vrrp.ActionSendAdvert:
				fmt.Printf("send advertisement, priority %d\n", a.Priority)
			case vrrp.ActionAddVIPs:
				fmt.Printf("add %v\n", a.VIPs)
			case vrrp.ActionAnnounce:
				fmt.Printf("gratuitous ARP for %v\n", a.VIPs)
			case vrrp.ActionArmTimer:
				fmt.Printf("call HandleTimer at +%v (%v)\n", a.At.Sub(start), a.Timer)
			}
		}
	}
	acts := make([]vrrp.Action, 0, 8)

	acts = inst.Start(start, acts[:0])
	show(acts)
	// Nobody advertises: the Master_Down_Timer runs out.
	acts = inst.HandleTimer(inst.Deadline(), acts[:0])
	show(acts)
	// Output:
	// INIT -> BACKUP (startup)
	// call HandleTimer at +3.4140625s (Master_Down_Timer)
	// send advertisement, priority 150
	// BACKUP -> MASTER (master down timer expired)
	// add [10.99.0.100/24]
	// gratuitous ARP for [10.99.0.100/24]
	// call HandleTimer at +4.4140625s (Adver_Timer)
}
