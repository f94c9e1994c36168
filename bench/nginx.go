package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// nginx is the hit path's outside baseline: nginx's proxy_cache in front of
// the same simulated provider, caching POST answers under a key made of the
// request body, as groundhog's exact cache keys on it.
//
// Debian's nginx (nginx-light and nginx) has no module that hashes a body,
// and its njs module is a separate package; proxy_cache_key $request_body
// needs neither. nginx reads the whole body before the upstream stage that
// computes the cache key, and with client_body_buffer_size above the body
// the body stays in memory, so $request_body holds it; nginx keys the cache
// by the MD5 of the key string (the body), and stores the key itself in each
// cache file's header, so proxy_buffer_size must hold the longest body too.
// With a 200 KB body it does not cache in this configuration (every
// request a MISS), so the baseline runs for bodies up to nginxMaxBody only
// (the 1 KB figure; sizes in between are untested). The key is the raw
// bytes: unlike groundhog's canonical fingerprint, a body with its members
// reordered is another key — the baseline is the cheaper job.
const nginxMaxBody = 64 << 10

const nginxConf = `daemon off;
master_process on;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log error;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  proxy_cache_path %[1]s/cache levels=1:2 keys_zone=bench:16m max_size=1g inactive=1h use_temp_path=off;
  upstream sim { server %[3]s; keepalive 64; }
  server {
    listen %[2]s;
    client_max_body_size 8m;
    client_body_buffer_size 8m;
    location = /healthz { return 200 "ok"; }
    location / {
      proxy_pass http://sim;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache bench;
      proxy_cache_methods POST;
      proxy_cache_key $request_body;
      proxy_cache_valid 200 1h;
      proxy_ignore_headers Cache-Control Expires Set-Cookie Vary X-Accel-Expires;
      proxy_buffer_size 1m;
      proxy_buffers 8 1m;
      proxy_busy_buffers_size 2m;
      add_header X-Cache-Status $upstream_cache_status;
    }
  }
}
`

// startNginx starts nginx with nginxConf in front of upstream, or returns
// nil and no error when no nginx binary is installed.
func (o *Options) startNginx(ctx context.Context, upstream string) (*server, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
				break
			}
		}
		if bin == "" {
			return nil, nil
		}
	}
	dir := filepath.Join(o.Dir, "nginx")
	for _, d := range []string{"body", "proxy", "fastcgi", "uwsgi", "scgi", "cache"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(nginxConf, dir, addr, strings.TrimPrefix(upstream, "http://"))
	if os.Geteuid() == 0 {
		// Workers of a root master switch to an unprivileged user that
		// could not write the scratch directory.
		conf = "user root;\n" + conf
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: "nginx", cmd: cmd, url: "http://" + addr, children: true}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(s.url + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("nginx did not become healthy at %s: %s", s.url, strings.TrimSpace(string(log)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childPIDs lists pid's child processes (nginx's workers), from
// /proc/<pid>/task/<pid>/children.
func childPIDs(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// nginxHits primes nginx's cache with req and checks that the next identical
// request is answered from it (X-Cache-Status: HIT): a baseline that missed
// would measure the provider, not a cache.
func nginxHits(ctx context.Context, ngx *server, req request) error {
	if _, err := capture(ctx, ngx, req); err != nil {
		return err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := req.do(ctx, client, ngx.url, 0)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if st := res.Header.Get("X-Cache-Status"); res.StatusCode != 200 || st != "HIT" {
		return fmt.Errorf("nginx does not answer a repeated body from its cache: status %d, X-Cache-Status %q", res.StatusCode, st)
	}
	return nil
}
