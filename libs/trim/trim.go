// Package trim shrinks the objects a component's informer cache keeps to the
// fields the component reads. On a large cluster the cache of Nodes is most
// of a controller's memory, and a Node changes every few seconds for reasons
// nobody here reads (heartbeats, images): a trimmed cache is smaller, and
// predicates comparing trimmed objects see only changes that matter.
//
// Every transform here keeps an object's identity and lifecycle (Meta) and
// replaces the cache's default transform for its type, so it drops
// managedFields too.
package trim

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Meta is m's identity and lifecycle: what an informer needs of any object
// (name, namespace, UID, resourceVersion) and what planners read of most
// (generation, creation and deletion times). Labels, annotations, owner
// references, finalizers and managedFields are dropped.
func Meta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
	}
}

// Func makes f a cache transform for objects of type T; other objects pass
// through unchanged.
func Func[T any](f func(T) T) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		t, ok := obj.(T)
		if !ok {
			return obj, nil
		}
		return f(t), nil
	}
}

// Keys selects the label or annotation keys to keep.
type Keys func(key string) bool

// All keeps every key.
func All(string) bool { return true }

// Only keeps the keys named.
func Only(keys ...string) Keys {
	return func(k string) bool { return slices.Contains(keys, k) }
}

// Prefix keeps the keys that start with p.
func Prefix(p string) Keys {
	return func(k string) bool { return strings.HasPrefix(k, p) }
}

// Node says what of a Node a component's cache keeps, beyond Meta.
type Node struct {
	// Keep, when set, picks the nodes that keep the fields below; the
	// others keep their identity alone (the cpms-controller reads only
	// control-plane nodes). Nil: every node.
	Keep func(*corev1.Node) bool
	// Labels and Annotations select the keys kept; nil keeps none.
	Labels, Annotations Keys
	// Conditions are the condition types kept, without their heartbeat
	// time (which changes every few seconds and nobody reads).
	Conditions []corev1.NodeConditionType
	// ProviderID keeps spec.providerID; Unschedulable keeps
	// spec.unschedulable (cordoning).
	ProviderID, Unschedulable bool
	// Taints are the taint keys kept (the cordon's, the kubelet's
	// pressure taints); nil keeps none.
	Taints []string
	// Intern shares the kept strings between nodes: thousands of nodes
	// carry the same label keys, pool names, rendered configs and
	// condition reasons, and the informer decodes a copy per node.
	Intern bool
}

// Transform is the cache transform of Nodes.
func (o Node) Transform() toolscache.TransformFunc { return Func(o.Trim) }

// Trim returns the part of n the cache keeps, a new object.
func (o Node) Trim(n *corev1.Node) *corev1.Node {
	t := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: Meta(n.ObjectMeta)}
	if o.Keep != nil && !o.Keep(n) {
		return t
	}
	str := func(s string) string { return s }
	if o.Intern {
		str = Intern
	}
	t.Labels = pick(n.Labels, o.Labels, n.Name, str)
	t.Annotations = pick(n.Annotations, o.Annotations, n.Name, str)
	if o.ProviderID {
		t.Spec.ProviderID = n.Spec.ProviderID
	}
	if o.Unschedulable {
		t.Spec.Unschedulable = n.Spec.Unschedulable
	}
	for _, taint := range n.Spec.Taints {
		if slices.Contains(o.Taints, taint.Key) {
			t.Spec.Taints = append(t.Spec.Taints, taint)
		}
	}
	for _, c := range n.Status.Conditions {
		if !slices.Contains(o.Conditions, c.Type) {
			continue
		}
		c.LastHeartbeatTime = metav1.Time{}
		c.Type, c.Status = corev1.NodeConditionType(str(string(c.Type))), corev1.ConditionStatus(str(string(c.Status)))
		c.Reason, c.Message = str(c.Reason), str(c.Message)
		t.Status.Conditions = append(t.Status.Conditions, c)
	}
	return t
}

// pick is the entries of m whose keys keep selects (nil when none), their
// strings passed through str. A value equal to self (a Node's hostname
// label is its name) is self, which the object holds anyway.
func pick(m map[string]string, keep Keys, self string, str func(string) string) map[string]string {
	if keep == nil || len(m) == 0 {
		return nil
	}
	var out map[string]string
	for k, v := range m {
		if !keep(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(m))
		}
		if v == self {
			v = self
		} else {
			v = str(v)
		}
		out[str(k)] = v
	}
	return out
}

// Intern is s's shared copy: the first string of equal content Intern was
// given, kept in a pool of at most MaxInterned strings. A full pool starts
// again empty, so values nobody holds any more (an old rendered config, a
// past message) do not pile up; strings already handed out stay valid.
//
// (The standard library's unique package shares a value only while a
// Handle to it lives, which a string taken from it is not: between two
// garbage collections the cache's strings would be shared, after one not.)
func Intern(s string) string {
	if s == "" {
		return ""
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if v, ok := pool.strings[s]; ok {
		return v
	}
	if pool.strings == nil || len(pool.strings) >= MaxInterned {
		pool.strings = make(map[string]string, 256)
	}
	s = strings.Clone(s)
	pool.strings[s] = s
	return s
}

// MaxInterned bounds Intern's pool: far more than the distinct label keys,
// pools, configs, reasons and messages of a cluster at one time.
const MaxInterned = 16384

var pool struct {
	mu      sync.Mutex
	strings map[string]string
}

// InternMap is a copy of m with shared keys and values (a value equal to
// self is self); nil for an empty m.
func InternMap(m map[string]string, self string) map[string]string {
	return pick(m, All, self, Intern)
}
