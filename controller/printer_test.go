package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/vrrp-operator/vrrp-operator/api/v1alpha1"
)

// TestPrinterColumns asks the API server for the table kubectl get prints
// and checks the columns and their values for a reconciled group.
func TestPrinterColumns(t *testing.T) {
	ns := newNamespace(t, "print")
	sel := map[string]string{"print-test": ns}
	newNodes(t, ns, 2, sel)
	newGroup(t, ns, "g", func(g *v1alpha1.KeepalivedGroup) { g.Spec.NodeSelector = sel })
	newService(t, ns, "s", ns+"/g", withExternalIPs("10.99.0.90"))
	startManager(t, ns)

	cs, err := kubernetes.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/apis/redhatcop.redhat.io/v1alpha1/namespaces/%s/keepalivedgroups", ns)
	eventually(t, 20*time.Second, func() error {
		body, err := cs.CoreV1().RESTClient().Get().AbsPath(path).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
		if err != nil {
			return err
		}
		var table metav1.Table
		if err := json.Unmarshal(body, &table); err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		// kubectl get shows the priority-0 columns; -o wide adds the others.
		var cols, wide []string
		for _, c := range table.ColumnDefinitions {
			if c.Priority == 0 {
				cols = append(cols, c.Name)
			} else {
				wide = append(wide, c.Name)
			}
		}
		if fmt.Sprint(cols) != "[Name Interface Nodes Instances Ready Age]" {
			return fmt.Errorf("columns %v", cols)
		}
		if len(table.Rows) != 1 {
			return fmt.Errorf("%d rows", len(table.Rows))
		}
		if got := fmt.Sprint(table.Rows[0].Cells[:5]); got != "[g eth0 2 1 True]" {
			return fmt.Errorf("row %s", got)
		}
		// The wide columns show the conditions as the group's status holds them.
		if fmt.Sprint(wide) != "[Degraded Reason Image-Substituted Message]" {
			return fmt.Errorf("wide columns %v", wide)
		}
		var g v1alpha1.KeepalivedGroup
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "g"}, &g); err != nil {
			return err
		}
		cond := func(typ string) metav1.Condition {
			for _, c := range g.Status.Conditions {
				if c.Type == typ {
					return c
				}
			}
			return metav1.Condition{}
		}
		deg, sub := cond(v1alpha1.ConditionDegraded), cond(v1alpha1.ConditionImageSubstituted)
		if deg.Status == "" || sub.Status == "" {
			return fmt.Errorf("conditions not written yet: %+v", g.Status.Conditions)
		}
		want := fmt.Sprint([]any{string(deg.Status), deg.Reason, string(sub.Status), deg.Message})
		if got := fmt.Sprint(table.Rows[0].Cells[6:]); got != want {
			return fmt.Errorf("wide cells %s, want %s", got, want)
		}
		return nil
	})
}
