package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromiumTimeout bounds one Chromium run: the machine is shared, but a
// page without script renders in well under a second.
const chromiumTimeout = 60 * time.Second

// findChromium returns the Chromium binary, or skips the test when it is
// missing (fails instead with GROUNDHOG_TEST_REQUIRE_SERVICES=1).
func findChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("GROUNDHOG_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("chromium not found (install Debian's chromium package): %v", err)
		}
		t.Skip("chromium not installed; apt-get install -y chromium to run this test")
	}
	return path
}

// runChromium runs headless Chromium on url with extra flags and returns
// its stdout.
func runChromium(t *testing.T, bin, target string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", // containers have a small /dev/shm
		"--user-data-dir=" + t.TempDir(),
	}, extra...)
	args = append(args, target)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v (context: %v)\nstderr:\n%s", extra, err, ctx.Err(), stderr.String())
	}
	return stdout.Bytes()
}

// TestChromium renders the dashboard in headless Chromium from a loopback
// server: the numbers in the DOM Chromium builds must equal the report JSON
// the same server answers, and a 1280-pixel-wide screenshot must be a real
// picture, and so must a phone-sized one. With GROUNDHOG_DASHBOARD_SCREENSHOT
// set to a .png path, the screenshots are also copied there (the narrow one
// with a "-narrow" suffix), to look at them.
func TestChromium(t *testing.T) {
	bin := findChromium(t)
	d, _ := newTestDashboard(t)

	// Chromium cannot send a Bearer header; it sends the key through HTTP
	// Basic credentials in the URL, as a user would type it at the browser's
	// prompt.
	mux := http.NewServeMux()
	mux.Handle("GET /groundhog/{$}", d.Handler())
	mux.Handle(ReportPath, d.ReportHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("me", keyAcme)
	page := u.String() + "/groundhog/"

	// The report JSON, from the same server.
	req, _ := http.NewRequest("GET", srv.URL+ReportPath+"?day=today", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	reportJSON, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("report: %d %v", resp.StatusCode, err)
	}

	t.Run("DOM", func(t *testing.T) {
		dom := string(runChromium(t, bin, page, "--dump-dom"))
		if !strings.Contains(dom, "Duplicate work") {
			t.Fatalf("Chromium's DOM is not the dashboard:\n%.2000s", dom)
		}
		if n := checkDOMAgainstReport(t, dom, reportJSON); n < 5*15 {
			t.Errorf("only %d numbers compared", n)
		}
		if strings.Contains(dom, "beta-secret-op") {
			t.Error("acme's dashboard shows tenant beta's operation")
		}
		// The XSS operation is text, not an element: Chromium built no
		// script element from it.
		if strings.Contains(dom, "<script") || !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Error("the operation named <script>…</script> is not shown as text")
		}
		if n := strings.Count(dom, `<svg role="img"`); n != charts {
			t.Errorf("%d charts in the DOM, want %d", n, charts)
		}
		checkBreaksTable(t, dom, reportJSON, "")
	})

	// A desktop window and a phone-sized one: both must render a picture.
	for _, sc := range []struct {
		name          string
		width, height int
		suffix        string
	}{
		{"screenshot", 1280, 1600, ""},
		{"narrow screenshot", 390, 2400, "-narrow"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			shot := filepath.Join(t.TempDir(), "dash.png")
			runChromium(t, bin, page, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", sc.width, sc.height), "--hide-scrollbars")
			img := decodePNG(t, shot)
			if b := img.Bounds(); b.Dx() != sc.width || b.Dy() != sc.height {
				t.Errorf("screenshot is %v, want %d×%d", b, sc.width, sc.height)
			}
			checkPicture(t, img)
			if dst := os.Getenv("GROUNDHOG_DASHBOARD_SCREENSHOT"); dst != "" {
				dst = strings.TrimSuffix(dst, ".png") + sc.suffix + ".png"
				b, err := os.ReadFile(shot)
				if err == nil {
					err = os.WriteFile(dst, b, 0o644)
				}
				if err != nil {
					t.Errorf("copy screenshot: %v", err)
				}
			}
		})
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("screenshot not written: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img
}

// checkPicture fails on a blank or near-blank picture: a page that rendered
// has text, bars of several series colours and a background.
func checkPicture(t *testing.T, img image.Image) {
	t.Helper()
	b := img.Bounds()
	colours := map[[3]uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
		}
	}
	if len(colours) < 32 {
		t.Errorf("screenshot has %d distinct colours: blank?", len(colours))
	}
	// The background must not be nearly everything.
	most := 0
	for _, n := range colours {
		most = max(most, n)
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	if float64(most) > 0.97*float64(total) {
		t.Errorf("one colour covers %d of %d sampled pixels", most, total)
	}
}
