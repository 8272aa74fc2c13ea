package storage

import (
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusError is a store error that k8s.io/apiserver answers with its
// Status (it looks for a Status() method on the errors it is given).
type statusError struct {
	code       int32
	reason     metav1.StatusReason
	retryAfter int32
	err        error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

func (e statusError) Status() metav1.Status {
	st := metav1.Status{Status: metav1.StatusFailure, Code: e.code, Reason: e.reason, Message: e.err.Error()}
	if e.retryAfter > 0 {
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: e.retryAfter}
	}
	return st
}

// tooLargeError answers a write larger than MaxRequestBytes. Its Error is
// etcd's very words, which make the API server try again without
// managedFields, as it does with etcd; its Status is 413 with the limit.
type tooLargeError struct{ size int }

func (tooLargeError) Error() string    { return "etcdserver: request is too large" }
func (tooLargeError) Code() codes.Code { return codes.InvalidArgument }

func (e tooLargeError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusRequestEntityTooLarge, Reason: metav1.StatusReasonRequestEntityTooLarge,
		Message: fmt.Sprintf("the object is %d bytes stored, more than the %d bytes (1.5 MiB) a heaven stores in one object", e.size, MaxRequestBytes)}
}
