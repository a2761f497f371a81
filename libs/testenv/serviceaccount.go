package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccountConfig returns a client config authenticated as the
// ServiceAccount namespace/name with a token from the TokenRequest API, so a
// test can run a component with exactly the RBAC its chart grants. The
// ServiceAccount must exist.
func (e *Env) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := e.Clientset()
	if err != nil {
		return nil, err
	}
	expiry := int64(24 * 60 * 60)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// ServiceAccountKubeconfig writes a kubeconfig for the ServiceAccount
// namespace/name into Dir and returns its path, for running a component as a
// separate process.
func (e *Env) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	cfg, err := e.ServiceAccountConfig(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.Dir, fmt.Sprintf("sa-%s-%s.kubeconfig", namespace, name))
	return path, WriteKubeconfig(cfg, path)
}

// WriteKubeconfig writes a token- or certificate-authenticated rest.Config as
// a kubeconfig file.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["env"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["env"] = &clientcmdapi.Context{Cluster: "env", AuthInfo: "user"}
	kc.CurrentContext = "env"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// AdminServiceAccountConfig creates the ServiceAccount namespace/name (and
// its namespace) bound to cluster-admin, and returns a config authenticated
// as it: for a controller suite whose audit log must tell the controller's
// requests from the test's, where the chart's least-privilege role is not
// what is tested.
func (e *Env) AdminServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	if err := e.CreateNamespace(ctx, namespace); err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, sa)); err != nil {
		return nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + ":" + name + ":cluster-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, crb)); err != nil {
		return nil, err
	}
	return e.ServiceAccountConfig(ctx, namespace, name)
}
