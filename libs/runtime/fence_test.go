package runtime

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a Lease lock whose writes succeed or fail as told.
type fakeLock struct {
	resourcelock.Interface
	fail error
}

func (l *fakeLock) Identity() string { return "me" }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.fail
}
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.fail
}

func TestFenceLeadsOnlyWithinTheRenewDeadlineOfItsLastRenewal(t *testing.T) {
	lock := &fakeLock{}
	f := newFence(lock, 50*time.Millisecond)
	if f.leading() {
		t.Fatal("leading before any renewal")
	}
	if err := f.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if !f.leading() {
		t.Fatal("not leading right after taking the Lease")
	}
	// A failed renewal does not extend the lead; the deadline passes.
	lock.fail = errors.New("conflict")
	_ = f.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	deadline := time.Now().Add(time.Second)
	for f.leading() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if f.leading() {
		t.Fatal("still leading a second after the last renewal, with a 50ms renew deadline")
	}
	// Renewed again: leading; released (the holder cleared): not.
	lock.fail = nil
	_ = f.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	if !f.leading() {
		t.Fatal("not leading after a renewal")
	}
	_ = f.Update(context.Background(), resourcelock.LeaderElectionRecord{})
	if f.leading() {
		t.Fatal("leading after releasing the Lease")
	}
}

func TestFenceRefusesOnlyWritesThatChangeTheCluster(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	rt := newFence(&fakeLock{}, time.Second).wrap(http.DefaultTransport) // never renewed: not leading
	for _, tc := range []struct {
		method, path string
		refused      bool
	}{
		{http.MethodGet, "/apis/upgrade.managed.openshift.io/v1alpha1/namespaces/x/upgradeconfigs", false},
		{http.MethodPatch, "/apis/upgrade.managed.openshift.io/v1alpha1/namespaces/x/upgradeconfigs/c/status", true},
		{http.MethodPost, "/apis/batch/v1/namespaces/x/jobs", true},
		{http.MethodDelete, "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machines/m", true},
		{http.MethodPut, "/api/v1/nodes/n", true},
		{http.MethodPost, "/api/v1/namespaces/x/events", false},
		{http.MethodPatch, "/apis/events.k8s.io/v1/namespaces/x/events/e", false},
		{http.MethodPost, "/api/v1/namespaces/events/configmaps", true},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", false},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		if refused := errors.Is(err, ErrNotLeading); refused != tc.refused {
			t.Errorf("%s %s: refused %t, want %t (err %v)", tc.method, tc.path, refused, tc.refused, err)
		}
	}
}

func TestFencedGuardsOutsideServicesWritesOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	rt := Fenced(nil)
	call := func(method string) error {
		req, _ := http.NewRequest(method, srv.URL+"/api/v2/silences", nil)
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		return err
	}
	// Without leader election (no fence in the process): everything passes.
	if err := call(http.MethodPost); err != nil {
		t.Fatalf("POST without leader election: %v", err)
	}
	f := newFence(&fakeLock{}, time.Second)
	processFence.Store(f)
	defer processFence.Store(nil)
	if err := call(http.MethodGet); err != nil {
		t.Fatalf("GET while not leading: %v", err)
	}
	for _, m := range []string{http.MethodPost, http.MethodPatch, http.MethodDelete} {
		if err := call(m); !errors.Is(err, ErrNotLeading) {
			t.Fatalf("%s while not leading: %v, want ErrNotLeading", m, err)
		}
	}
	_ = f.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	if err := call(http.MethodPost); err != nil {
		t.Fatalf("POST while leading: %v", err)
	}
}
