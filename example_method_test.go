package acprpc_test

import (
	"context"
	"fmt"

	"github.com/acpkit/acprpc"
)

// A Method knows its name and its types: the agent serves it with a typed
// function, the client calls it and gets the typed result back, and neither
// writes the name or a type argument again. acpv1 and acpv2 declare one for
// each of ACP's methods; this one is an extension method of an SDK's own.
func ExampleMethod() {
	type echoParams struct{ Text string }
	type echoResult struct{ Said string }
	echo := acprpc.Method[echoParams, echoResult]{Name: "_example/echo"}

	router := acprpc.NewRouter()
	echo.Handle(router, func(ctx context.Context, p echoParams) (echoResult, error) {
		return echoResult{Said: "you said " + p.Text}, nil
	})
	agent, client := exPipe(router, nil, nil)
	defer agent.Close()
	defer client.Close()

	res, err := echo.Call(context.Background(), client, echoParams{Text: "hi"})
	fmt.Println(res.Said, err)
	// Output: you said hi <nil>
}

// A Notification is the same for a method that expects no answer.
func ExampleNotification() {
	type note struct{ Text string }
	progress := acprpc.Notification[note]{Name: "_example/progress"}

	router := acprpc.NewRouter()
	got := make(chan string, 1)
	progress.Handle(router, func(ctx context.Context, n note) { got <- n.Text })
	agent, client := exPipe(nil, router, nil)
	defer agent.Close()
	defer client.Close()

	err := progress.Notify(context.Background(), agent, note{Text: "halfway"})
	fmt.Println(<-got, err)
	// Output: halfway <nil>
}
