package deployment

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateStrategy(s *appsv1.DeploymentStrategy, path *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(path.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(path.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdate(s.RollingUpdate, path.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), s.Type,
			[]appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType})}
	}
}

// validateRollingUpdate keeps the rollout able to make progress: both bounds
// non-negative, maxUnavailable at most 100%, and not both zero.
func validateRollingUpdate(r *appsv1.RollingUpdateDeployment, path *field.Path) field.ErrorList {
	unavailable, errs := intOrPercent(r.MaxUnavailable, path.Child("maxUnavailable"))
	surge, surgeErrs := intOrPercent(r.MaxSurge, path.Child("maxSurge"))
	errs = append(errs, surgeErrs...)
	if r.MaxUnavailable != nil && r.MaxUnavailable.Type == intstr.String && unavailable > 100 {
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), r.MaxUnavailable.String(), "must not be greater than 100%"))
	}
	if len(errs) == 0 && unavailable == 0 && surge == 0 {
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), r.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
	}
	return errs
}

// intOrPercent returns the number or percentage in v, checking its form.
func intOrPercent(v *intstr.IntOrString, path *field.Path) (int, field.ErrorList) {
	if v == nil {
		return 0, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, field.ErrorList{field.Invalid(path, v.IntVal, "must be greater than or equal to 0")}
		}
		return int(v.IntVal), nil
	}
	if msgs := validation.IsValidPercent(v.StrVal); len(msgs) > 0 {
		return 0, field.ErrorList{field.Invalid(path, v.StrVal, strings.Join(msgs, "; "))}
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil {
		return 0, field.ErrorList{field.Invalid(path, v.StrVal, err.Error())}
	}
	return n, nil
}
