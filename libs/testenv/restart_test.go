package testenv_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/libs/testenv"
)

var _ = Describe("restarting kube-apiserver", func() {
	It("keeps every object, client and token, and expires the watches of older versions", func(ctx SpecContext) {
		Expect(env.CreateNamespace(ctx, "restart")).To(Succeed())
		Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "restart", Name: "sa"}})).To(Succeed())
		saConfig, err := env.ServiceAccountConfig(ctx, "restart", "sa")
		Expect(err).NotTo(HaveOccurred())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "restart", Name: "before"}}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		before := cm.ResourceVersion
		// A later write: the new watch cache starts past `before`.
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "restart", Name: "later"}})).To(Succeed())

		Expect(env.RestartAPIServer(ctx, testenv.RestartOptions{Down: 200 * time.Millisecond})).To(Succeed())

		// The admin client and the object are still there.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())
		// A token issued before the restart still authenticates: the
		// service-account signing key survived (the SA may not list
		// ConfigMaps, so Forbidden, not Unauthorized, is the proof).
		sa, err := kubernetes.NewForConfig(saConfig)
		Expect(err).NotTo(HaveOccurred())
		_, err = sa.CoreV1().ConfigMaps("restart").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
		// A watch resumed from before the restart is told its version is gone.
		cs, err := env.Clientset()
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			w, err := cs.CoreV1().ConfigMaps("restart").Watch(ctx, metav1.ListOptions{ResourceVersion: before})
			if err != nil {
				return err
			}
			defer w.Stop()
			select {
			case ev := <-w.ResultChan():
				if st, ok := ev.Object.(*metav1.Status); ok {
					return apierrors.FromObject(st)
				}
				return nil
			case <-time.After(5 * time.Second):
				return nil
			}
		}).Should(Satisfy(apierrors.IsResourceExpired), "a watch from resourceVersion %s after the restart", before)
	})

	It("with CompactHistory, expires every watch from before at once", func(ctx SpecContext) {
		Expect(env.CreateNamespace(ctx, "compact")).To(Succeed())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "compact", Name: "before"}}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		before := cm.ResourceVersion
		Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "compact", Name: "later"}})).To(Succeed())

		Expect(env.RestartAPIServer(ctx, testenv.RestartOptions{Down: 200 * time.Millisecond, CompactHistory: true})).To(Succeed())

		// etcd no longer has the revision: a list at exactly it is refused
		// (without the compaction, etcd serves it).
		cs, err := env.Clientset()
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().ConfigMaps("compact").List(ctx, metav1.ListOptions{ResourceVersion: before, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "a list at exactly %s: want 410 Gone, got %v", before, err)
		// And so is a watch from it, on the first try, however the new
		// apiserver serves it.
		w, err := cs.CoreV1().ConfigMaps("compact").Watch(ctx, metav1.ListOptions{ResourceVersion: before})
		if err == nil {
			defer w.Stop()
			ev := <-w.ResultChan()
			st, ok := ev.Object.(*metav1.Status)
			Expect(ok).To(BeTrue(), "the watch from %s delivered %s %T, not an error", before, ev.Type, ev.Object)
			err = apierrors.FromObject(st)
		}
		Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "want 410 Gone, got %v", err)
		// Only history went: the objects are there.
		for _, name := range []string{"before", "later"} {
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "compact", Name: name}, &corev1.ConfigMap{})).To(Succeed())
		}
	})
})
