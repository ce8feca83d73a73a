#!/usr/bin/env bash
# keep_alive HTTP and HTTPS health checks against nginx, a web server gwlb did
# not write, as four appliances' health endpoints on loopback: one answering
# HTTP, one HTTPS (its own self-signed certificate), one HTTP whose
# keepalive_timeout (50 ms) is shorter than the checks' interval; and one
# HTTPS without keep_alive, whose probes resume their TLS sessions. Checks in
# tests/daemon/nginx_probes_e2e.py, on nginx's own access log and stub_status
# and on gwlbd's /metrics.
#   run_nginx_probes.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http_port=$(free_port) https_port=$(free_port) status_port=$(free_port) metrics_port=$(free_port)
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=appliance.test \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
# One process (no master, no workers to switch user to), everything under
# $work, listening on loopback addresses only.
cat > "$work/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $work/body;
  proxy_temp_path $work/proxy;
  fastcgi_temp_path $work/fastcgi;
  uwsgi_temp_path $work/uwsgi;
  scgi_temp_path $work/scgi;
  log_format probes '\$server_addr \$connection \$connection_requests \$request_uri \$status \$ssl_session_reused';
  keepalive_requests 1000;
  keepalive_timeout 60s;
  server {
    listen 127.0.0.21:$http_port;
    listen 127.0.0.22:$https_port ssl;
    listen 127.0.0.24:$https_port ssl;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    access_log $work/access.log probes;
    location = /health { return 200 "ok\n"; }
  }
  server {
    listen 127.0.0.23:$http_port;
    keepalive_timeout 50ms;
    access_log $work/access.log probes;
    location = /health { return 200 "ok\n"; }
  }
  server {
    listen 127.0.0.1:$status_port;
    location = /status { stub_status; }
  }
}
CONF
nginx -t -p "$work" -c "$work/nginx.conf" -e "$work/error.log" 2>&1 | tail -1
nginx -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
nginx_pid=$!
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
metrics: { listen: "127.0.0.1:$metrics_port" }
server_groups:
  - name: web
    health_check: { protocol: http, port: $http_port, path: /health, keep_alive: true, interval: 200ms,
                    timeout: 1s, interface: lo, healthy_threshold: 2, unhealthy_threshold: 2 }
    servers: [ { address: 127.0.0.21 }, { address: 127.0.0.23 } ]
  - name: tls
    health_check: { protocol: https, port: $https_port, path: /health, keep_alive: true, interval: 200ms,
                    timeout: 1s, interface: lo, healthy_threshold: 2, unhealthy_threshold: 2 }
    servers: [ { address: 127.0.0.22 } ]
  - name: tls-each
    health_check: { protocol: https, port: $https_port, path: /health, interval: 200ms,
                    timeout: 1s, interface: lo, healthy_threshold: 2, unhealthy_threshold: 2 }
    servers: [ { address: 127.0.0.24 } ]
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 4096 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning", "--vdev", "net_null0"]
YAML
gwlbd_extra_cleanup="kill $nginx_pid 2>/dev/null || true; wait $nginx_pid 2>/dev/null || true"
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
$py "$src/tests/daemon/nginx_probes_e2e.py" --sock "$work/gwlbd.sock" --metrics "127.0.0.1:$metrics_port" \
    --status "127.0.0.1:$status_port" --access-log "$work/access.log" \
  || { tail -20 "$work/gwlbd.log"; tail -20 "$work/error.log"; exit 1; }
stop_gwlbd
