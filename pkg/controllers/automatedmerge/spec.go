package automatedmerge

import (
	"errors"
	"fmt"
	"strings"
	"time"

	builtin "github.com/heaven-dev/heaven/pkg/builtin"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/merge"
)

// Trigger defaults.
const (
	defaultInterval = time.Minute
	minInterval     = time.Second
)

// plan is a validated spec, with its defaults, ready to merge with.
type plan struct {
	sources  []string
	target   string
	onChange bool
	interval time.Duration
	merger   merge.Merger
	include  func(resource string) bool
}

// compile validates spec and fills in its defaults; ephemeral says which
// resources are never in git (they never merge, whatever spec says).
// Every problem is reported at once.
func compile(spec v1alpha1.AutomatedMergeSpec, ephemeral func(resource string) bool) (*plan, error) {
	p := &plan{target: spec.Target, onChange: true, interval: defaultInterval}
	var errs []error
	if err := v1alpha1.ValidateHeavenName(spec.Target); err != nil {
		errs = append(errs, fmt.Errorf("target %q is not a heaven name", spec.Target))
	}
	if len(spec.Sources) == 0 {
		errs = append(errs, errors.New("sources: at least one heaven"))
	}
	seen := map[string]bool{}
	for _, s := range spec.Sources {
		switch {
		case v1alpha1.ValidateHeavenName(s) != nil:
			errs = append(errs, fmt.Errorf("source %q is not a heaven name", s))
		case s == spec.Target:
			errs = append(errs, fmt.Errorf("source %q is the target", s))
		case seen[s]:
			errs = append(errs, fmt.Errorf("source %q is named twice", s))
		default:
			p.sources = append(p.sources, s)
		}
		seen[s] = true
	}
	if spec.Trigger.OnChange != nil {
		p.onChange = *spec.Trigger.OnChange
	}
	if spec.Trigger.Interval != nil {
		p.interval = spec.Trigger.Interval.Duration
		if p.interval < minInterval {
			errs = append(errs, fmt.Errorf("trigger.interval %s: at least %s", p.interval, minInterval))
		}
	}
	wanted := map[string]bool{}
	for _, r := range spec.Resources {
		if strings.Count(r, "/") != 1 || strings.HasPrefix(r, "/") || strings.HasSuffix(r, "/") {
			errs = append(errs, fmt.Errorf("resource %q: want <group or core>/<resource>", r))
		}
		wanted[r] = true
	}
	p.include = func(resource string) bool {
		if resource == "" || ephemeral != nil && ephemeral(resource) {
			return false
		}
		return len(wanted) == 0 || wanted[resource]
	}
	policy := merge.Policy{Default: merge.Resolution(spec.ConflictPolicy.Default), Fallback: merge.KubernetesRules}
	for _, r := range spec.ConflictPolicy.Rules {
		policy.Rules = append(policy.Rules, merge.PathRule{Resource: r.Resource, Path: r.Path, Resolution: merge.Resolution(r.Resolution)})
	}
	if err := policy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("conflictPolicy: %w", err))
	}
	p.merger = merge.Merger{Policy: policy, Lists: builtin.ListRules()}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}
