package runtime_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/libs/testenv"
)

// TestReadyOnlyOnceCachesSynced checks the readiness check against a real
// cache: not ready before the cache starts, not ready while an informer
// cannot list (its ServiceAccount may not, yet), ready once it has listed.
func TestReadyOnlyOnceCachesSynced(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	const ns, name = "default", "cache-user"
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})).To(Succeed())
	cfg, err := env.ServiceAccountConfig(ctx, ns, name)
	g.Expect(err).NotTo(HaveOccurred())

	// The informer's list errors reach us here: proof that the cache runs
	// and is refused, rather than not running yet.
	refused := make(chan error, 1)
	var once sync.Once
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.Scheme,
		DefaultWatchErrorHandler: func(_ context.Context, _ *toolscache.Reflector, err error) {
			once.Do(func() { refused <- err })
		}})
	g.Expect(err).NotTo(HaveOccurred())
	check := runtime.CacheSynced(c, 100*time.Millisecond)
	probe := func() error { return check(httptest.NewRequest("GET", "/readyz", nil)) }

	_, err = c.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(probe()).To(MatchError(ContainSubstring("not synced")), "cache not started")

	go func() { _ = c.Start(ctx) }()
	select {
	case err := <-refused:
		g.Expect(apierrors.IsForbidden(err) || strings.Contains(err.Error(), "forbidden")).To(BeTrue(), "%v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the informer never tried to list")
	}
	g.Expect(probe()).To(MatchError(ContainSubstring("not synced")), "started, but the list is refused")

	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	for _, o := range []client.Object{role, binding} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	// The reflector retries with a backoff of up to 30 s.
	g.Eventually(probe).WithTimeout(45 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}
