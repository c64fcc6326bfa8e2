// Package metrics is vrrpd's HTTP surface: Prometheus metrics named as the
// keepalived_exporter that the original keepalived-operator runs beside keepalived
// (gen2brain/keepalived_exporter 0.5.0), so existing dashboards and alerts keep working;
// a state gauge, which that exporter lacks, named keepalived_vrrp_state as the other
// common exporter (mehdy/keepalived-exporter) names its own; vrrpd_-prefixed extras; the
// probes /healthz, /livez and /readyz; and the JSON /status that `vrrpd status` prints.
//
// It is served with the standard libraries: a prometheus.Registry holding Collector (the
// daemon's families, made from one Snapshot per scrape; its tables keepalivedCounters and
// instanceFamilies map snapshot fields to families, so adding one is a line), client_golang's
// Go and process collectors and the build_info gauge, exposed by promhttp pinned to the
// classic text format, on a net/http server from internal/httpserver (timeouts, and a
// connection cap that evicts idle and header-less connections, the busiest source's first). NewProbeServer serves the
// probes alone, for the Unix socket vrrpd keeps in its state directory. README.md's metric
// tables are the contract, checked by readme_test.go.
//
// Nothing here holds VRRP state. The daemon publishes a Snapshot of its instances (see
// Source) and every scrape or status request reads the latest one, so serving HTTP never
// touches, locks or slows the daemon's loop.
//
// The families, each by its full name (doc_test.go holds this list to what a running
// handler serves, as readme_test.go holds README.md's tables), labelled {name, intf,
// vrid, state} unless noted:
//
//	keepalived_up (no labels)                          gauge, 1 healthy, 0 not (see below)
//	vrrpd_build_info{version,goversion}                gauge, always 1 (Options.Program)
//	keepalived_vrrp_advert_rcvd                        counters, keepalived's vrrp_stats,
//	keepalived_vrrp_advert_sent                        with the exporter's names and help
//	keepalived_vrrp_become_master                      texts
//	keepalived_vrrp_release_master
//	keepalived_vrrp_packet_len_err
//	keepalived_vrrp_advert_interval_err
//	keepalived_vrrp_ip_ttl_err
//	keepalived_vrrp_invalid_type_rcvd
//	keepalived_vrrp_addr_list_err
//	keepalived_vrrp_invalid_authtype
//	keepalived_vrrp_authtype_mismatch
//	keepalived_vrrp_auth_failure
//	keepalived_vrrp_pri_zero_rcvd
//	keepalived_vrrp_pri_zero_sent
//	vrrpd_checksum_err, vrrpd_version_err              counters, adverts dropped for a bad
//	                                                   checksum or another VRRP version
//	keepalived_vrrp_state{name,intf,vrid}              gauge: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT
//	vrrpd_priority{name,intf,vrid}                     gauge, the priority advertised now
//	vrrpd_base_priority{name,intf,vrid}                gauge, the configured priority
//	vrrpd_transitions_total{name,intf,vrid}            counter, every state change
//	vrrpd_last_transition_timestamp_seconds{name,intf,vrid}
//	                                                   gauge, Unix time of the latest one
//	vrrpd_vip_master{name,intf,vrid,vip}               gauge, 1 per VIP of a MASTER here, else 0
//	vrrpd_vip_conflict{name,intf,vrid,vip,mac}         gauge, 1 per VIP of a MASTER here that
//	                                                   another host (mac) answers for too, only
//	                                                   while it does (internal/conflict)
//	vrrpd_vip_preexisting_total{name,intf,vrid}        counter, VIPs found on the interface
//	                                                   already (not added, never removed)
//	vrrpd_vip_readded_total{name,intf,vrid}            counter, VIPs put back after someone
//	                                                   took them off a master's interface
//	vrrpd_advert_send_errors_total{name,intf,vrid}     counter, advertisements that did not go
//	                                                   out (each also logged, rate-limited)
//	vrrpd_instances{state}                             gauge, instances per state
//	vrrpd_packets_received_total{intf,family}          counter, per socket
//	vrrpd_malformed_dropped_total{intf,family}         counter, packets no instance could take
//	vrrpd_other_vrid_total{intf,family}                counter, packets for VRIDs not run here
//	keepalived_script_status{name}                     gauge, 1 while the vrrp_script is good
//	vrrpd_script_runs_total{name}                      counters per vrrp_script: runs, failed
//	vrrpd_script_failures_total{name}                  runs (timeouts included), runs killed
//	vrrpd_script_timeouts_total{name}                  at the timeout
//	vrrpd_tracker_ok{name,intf,vrid,kind,tracked}      gauge, 1 while a tracked interface or
//	                                                   file does not hold the instance in FAULT
//	vrrpd_tracker_priority_offset{name,intf,vrid,kind,tracked}
//	                                                   gauge, what it adds to the priority now
//	vrrpd_track_file_value{track_file}                 gauge, the number last read
//	vrrpd_sync_group_state{group}                      gauge: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT, 4 STOP
//
// plus the Go runtime's go_* and process_* metrics of client_golang's collectors.
//
// keepalived_up is 0 when the daemon is not doing its job, and then /healthz answers 503
// with the reason: its loop has made no turn for longer than max(3 × the smallest
// advertisement interval of its instances, 3 s) (past three intervals its backups have
// taken over from a master that hangs; the 3 s floor is three of the loop's idle turns),
// or an instance it should run could not start for a reason other than its interface's
// state (a socket refused for lack of CAP_NET_RAW, a macvlan that cannot be made). An
// interface that is missing, down or without an address is VRRP's FAULT state, shown by
// keepalived_vrrp_state, and leaves keepalived_up at 1, as keepalived's exporter does.
// /livez, the liveness probe, checks only the loop: a restart cures nothing else. /readyz,
// the readiness probe, passes once the configuration is loaded, every instance's socket is
// open and no instance is in INIT (daemon.Ready).
//
// Compatibility notes. keepalived_exporter labels its per-instance counters with the
// instance's current state, so a counter's series changes when the state does; we do the
// same, because dashboards sum over the state label. Counter names carry no _total suffix,
// as the exporter's do; vrrpd's own new counters follow Prometheus conventions instead.
// The exporter has a bug that exports advert_interval_err as ip_ttl_err; we export the real
// TTL error count.
package metrics
