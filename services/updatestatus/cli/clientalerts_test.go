package cli

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// A Thanos querier that answers the alerts API with one firing alert.
func newAlertsServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/alerts" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"alerts":[{"labels":{"alertname":"PodDisruptionBudgetAtLimit","severity":"warning"},` +
			`"annotations":{"summary":"at limit"},"state":"firing","activeAt":"2024-05-01T10:00:00Z","value":"1"}]}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func TestAlertsFromHostsTakesTheFirstThatAnswers(t *testing.T) {
	srv := newAlertsServer(t)
	host := strings.TrimPrefix(srv.URL, "https://")
	got, err := alertsFromHosts(context.Background(), []string{closedAddr(t), host}, srv.Client().Transport, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name() != "PodDisruptionBudgetAtLimit" || got[0].State != "firing" {
		t.Errorf("alerts %+v, want the one firing PodDisruptionBudgetAtLimit", got)
	}
}

func TestAlertsFromHostsNamesEveryHostThatFailed(t *testing.T) {
	a, b := closedAddr(t), closedAddr(t)
	_, err := alertsFromHosts(context.Background(), []string{a, b}, http.DefaultTransport, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "openshift-monitoring/thanos-querier") ||
		!strings.Contains(err.Error(), a+": ") || !strings.Contains(err.Error(), b+": ") {
		t.Errorf("error %v, want one naming the Route and both hosts", err)
	}
}

// The monitoring API authenticates bearer tokens only: with a client
// certificate the alerts are not even tried, and oc's notice says why.
func TestReadAlertsNeedsABearerToken(t *testing.T) {
	cl := clusterClients{cfg: &rest.Config{Host: "https://api.example:6443"}}
	got := readAlerts(context.Background(), cl)
	if got.err == nil || !strings.Contains(got.err.Error(), "no bearer token") || got.alerts != nil {
		t.Fatalf("read %+v, want an error about the missing token", got)
	}
	const prefix = "Unable to fetch alerts, ignoring alerts in 'Update Health':  "
	if n := alertsNotice(got.err); !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, "\n") {
		t.Errorf("notice %q, want oc's", n)
	}
}

// The controller's source line tells the status's age while the cluster
// updates (the controller then refreshes it at least once a minute), and
// none while it is idle.
func TestControllerSourceLine(t *testing.T) {
	loaded, updating := loadAssessed(t, "stalled")
	_, idle := loadAssessed(t, "not-updating")
	now := loaded.Snapshot.Now
	beat := []metav1.Condition{{Type: updatev1alpha1.ConditionHeartbeat, Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.Add(-12 * time.Second))}}
	for _, tc := range []struct {
		name   string
		status updatev1alpha1.UpgradeStatusStatus
		want   string
	}{
		{"updating", updating.Status, `Source: update-status-controller (UpgradeStatus "cluster", refreshed 12s ago)`},
		{"idle", idle.Status, `Source: update-status-controller (UpgradeStatus "cluster")`},
	} {
		us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: updatev1alpha1.UpgradeStatusName}, Status: tc.status}
		us.Status.Conditions = beat
		if got := controllerSourceLine(us, now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
