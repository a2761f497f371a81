// Package platform knows what a control-plane Machine's provider spec means on
// each cloud: which failure domain it places the machine in, how to put a
// machine into a given failure domain, and whether two provider specs ask for
// the same machine. It also maps the set's indexes to failure domains.
//
// AWS, Azure, GCP, vSphere, OpenStack and Nutanix are understood through the
// openshift/api provider types (machine/v1beta1 AWSMachineProviderConfig,
// AzureMachineProviderSpec, GCPMachineProviderSpec,
// VSphereMachineProviderSpec; machine/v1alpha1 OpenstackProviderSpec;
// machine/v1 NutanixMachineProviderConfig); any other provider spec is
// compared as canonical JSON. vSphere and Nutanix failure domains are names
// the Infrastructure defines, which FromSpec resolves. Everything here is
// pure: bytes and objects in, values out.
package platform
