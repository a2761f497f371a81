package bundle

import (
	"errors"
	"fmt"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	validationerrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// Validators are the operator-framework checks every bundle passes: the
// defaults (CSV, CRDs, the bundle as a whole: owned CRDs present, service
// accounts, size), the objects beside the CSV (PodDisruptionBudgets,
// PriorityClasses), good practices, and OperatorHub's: required metadata,
// capabilities and categories from its lists, and APIs removed in the
// Kubernetes releases up to the one given as "k8s-version".
//
// The library does not check install mode types against the four OLM knows
// (an unknown one validates); Build only writes the typed constants.
var Validators = validation.DefaultBundleValidators.WithValidators(
	validation.ObjectValidator,
	validation.GoodPracticesValidator,
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
)

// Validate loads the bundle in dir the way OLM's tooling does
// (manifests.GetBundleFromDir: the CSV, the CRDs, the other objects and
// metadata/annotations.yaml) and runs validators over it, with k8sVersion
// (e.g. "1.29") as the release removed APIs are checked against. It
// returns the warnings, and an error listing every error found.
func Validate(dir string, k8sVersion string, validators interfaces.Validators) (warnings []string, err error) {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the bundle in %s: %w", dir, err)
	}
	objs := b.ObjectsToValidate()
	objs = append(objs, map[string]string{"k8s-version": k8sVersion})
	var errs []string
	for _, result := range validators.Validate(objs...) {
		for _, e := range result.Errors {
			errs = append(errs, describe(result, e))
		}
		for _, w := range result.Warnings {
			warnings = append(warnings, describe(result, w))
		}
	}
	if len(errs) > 0 {
		return warnings, errors.New(strings.Join(errs, "\n"))
	}
	return warnings, nil
}

func describe(r validationerrors.ManifestResult, e validationerrors.Error) string {
	return fmt.Sprintf("%s: %s", r.Name, e.Error())
}
