package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// The limits and cross-site defences: a browser page posting text/plain to
// a control endpoint is refused, weight loading is confined to the allowed
// directory, and generation requests beyond MaxInFlight would get 429.
func Example_hardened() {
	weights, err := os.MkdirTemp("", "weights")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(weights)
	srv, err := httpapi.Start(servertest.New(servertest.Config{}), httpapi.Config{
		MaxInFlight:       256,
		AllowedWeightDirs: []string{weights},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()

	post := func(path, contentType, body string) int {
		resp, err := http.Post(srv.URL()+path, contentType, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println("text/plain to /sleep:", post("/sleep", "text/plain", `{}`))
	fmt.Println("weights from /etc:", post("/update_weights_from_disk", "application/json", `{"model_path":"/etc"}`))
	fmt.Println("weights from the allowed dir:", post("/update_weights_from_disk", "application/json", fmt.Sprintf(`{"model_path":%q}`, weights)))
	// Output:
	// text/plain to /sleep: 415
	// weights from /etc: 403
	// weights from the allowed dir: 200
}

// Guard puts another handler (a metrics listener of its own) behind the
// checks the Server makes: here no token, so a request must name the
// server by an IP address, localhost or an allowed host (a DNS-rebinding
// page's requests carry its own host name).
func ExampleGuard() {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "up 1") })
	h, err := httpapi.Guard(metrics, httpapi.Config{AllowedHosts: []string{"trainer-0"}})
	if err != nil {
		panic(err)
	}
	for _, host := range []string{"127.0.0.1:9090", "trainer-0:9090", "rebind.example:9090"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/metrics", nil)
		h.ServeHTTP(w, r)
		fmt.Println(host, w.Code)
	}
	// Output:
	// 127.0.0.1:9090 200
	// trainer-0:9090 200
	// rebind.example:9090 421
}
