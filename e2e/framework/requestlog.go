package framework

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// RequestLog is a reverse proxy in front of a service that keeps no request
// log of its own (Alertmanager): the components are pointed at its URL, and
// a test reads who sent what, and what it was answered, from Requests. The
// service behind it is the real one; the proxy only passes requests on
// (while the service is down it answers 502, as a Service with no ready
// endpoint would refuse the connection).
type RequestLog struct {
	// URL is the proxy's base URL, in place of the service's.
	URL string

	srv  *httptest.Server
	mu   sync.Mutex
	reqs []LoggedRequest
}

// LoggedRequest is one request the proxy passed on.
type LoggedRequest struct {
	// Time is when the request reached the proxy, before the service saw it.
	Time         time.Time
	Method, Path string
	UserAgent    string
	// Status is the service's answer; 502 when the service could not be
	// reached, 0 when the client gave up before an answer.
	Status int
}

// Applied says whether the service accepted the request (a 2xx answer).
func (r LoggedRequest) Applied() bool { return r.Status >= 200 && r.Status < 300 }

// StartRequestLog starts a proxy to target (scheme://host[:port]).
func StartRequestLog(target string) (*RequestLog, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l := &RequestLog{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		// A service that is restarting is an answer, not a test failure.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := LoggedRequest{Time: time.Now(), Method: r.Method, Path: r.URL.Path, UserAgent: r.UserAgent()}
		sw := &statusWriter{ResponseWriter: w}
		proxy.ServeHTTP(sw, r)
		rec.Status = sw.status
		l.mu.Lock()
		l.reqs = append(l.reqs, rec)
		l.mu.Unlock()
	}))
	l.URL = l.srv.URL
	return l, nil
}

// Requests returns every request passed on so far, in the order they ended.
func (l *RequestLog) Requests() []LoggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LoggedRequest(nil), l.reqs...)
}

// Close stops the proxy.
func (l *RequestLog) Close() { l.srv.Close() }

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes a streamed answer on as it comes.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
