"""`cockpit exporter`: the fleet as Prometheus metrics, for a team's own Prometheus and Grafana.

A pure core (`families`: one immutable snapshot → metric families) under a thin asyncio shell
(`serve`: the same poller, feed and store as the TUI, a snapshot published every second, and
prometheus_client's HTTP server answering scrapes from the latest one).
"""
