package mathgrade_test

import (
	"fmt"

	"github.com/agentrl/agentrl/tool/internal/mathgrade"
)

func ExampleGradeAnswer() {
	fmt.Println(mathgrade.GradeAnswer(`3\sqrt{2}`, `\sqrt{18}`)) // equal values
	fmt.Println(mathgrade.GradeAnswer(`60^\circ`, "60"))         // units and degrees dropped
	fmt.Println(mathgrade.GradeAnswer("2/4", `\frac{1}{2}`))     // unreduced fractions must match as written
	fmt.Println(mathgrade.GradeAnswer("3.14", `\pi`))
	fmt.Println(mathgrade.ExtractBoxedContent(`so \boxed{\frac{1}{2}}.`))
	// Output:
	// true
	// true
	// false
	// false
	// \frac{1}{2}
}
