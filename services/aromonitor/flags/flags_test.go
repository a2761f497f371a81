package flags

import (
	"reflect"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		want Flags
	}{
		{"missing flags take ARO's defaults, not false", nil,
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true}},
		{"values are case-insensitive", map[string]string{CheckerEnabled: "FALSE", NSGManaged: "False", SubnetsEnabled: " True "},
			Flags{Checker: false, SubnetsEnabled: true, NSGManaged: false}},
		{"a preconfigured NSG turns remediation off", map[string]string{NSGManaged: "false"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: false}},
		{"unreadable values take the default and are reported", map[string]string{CheckerEnabled: "yes", NSGManaged: "0"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true, Invalid: []string{"aro.azuresubnets.nsg.managed=0", "aro.checker.enabled=yes"}}},
		{"other flags are ignored", map[string]string{"aro.azuresubnetsnsg.enabled": "false", "aro.banner.enabled": "true"},
			Flags{Checker: true, SubnetsEnabled: true, NSGManaged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Read(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Read(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}
