package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// Serving an engine and calling SGLang's /generate with plain HTTP.
func Example() {
	srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: servertest.Constant(7, 8)}), httpapi.Config{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	resp, err := http.Post(srv.URL()+"/generate", "application/json",
		strings.NewReader(`{"rid":"r1","input_ids":[1,2,3],"sampling_params":{"max_new_tokens":8}}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"output_ids":[7,8]`))
	http.DefaultClient.CloseIdleConnections()
	// Output: 200 true
}
