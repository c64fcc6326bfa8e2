// Package metrics is vrrpd's HTTP surface: Prometheus metrics named as the
// keepalived_exporter that the original keepalived-operator runs beside keepalived
// (gen2brain/keepalived_exporter 0.5.0), so existing dashboards and alerts keep working,
// plus vrrpd_-prefixed extras, a /healthz probe and the JSON /status that `vrrpd status`
// prints.
//
// Nothing here holds VRRP state. The daemon publishes a Snapshot of its instances (see
// Source) and every scrape or status request reads the latest one, so serving HTTP never
// touches, locks or slows the daemon's loop.
//
// Compatibility notes. keepalived_exporter labels its per-instance counters with the
// instance's current state, so a counter's series changes when the state does; we do the
// same, because dashboards sum over the state label. Counter names carry no _total suffix,
// as the exporter's do; vrrpd's own new counters follow Prometheus conventions instead.
// The exporter has a bug that exports advert_interval_err as ip_ttl_err; we export the real
// TTL error count.
package metrics
