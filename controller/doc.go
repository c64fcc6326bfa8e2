// Package controller is the operator's reconcilers.
package controller
