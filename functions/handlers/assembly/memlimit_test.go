package assembly

import "testing"

// Issue 17: a function's Go memory limit is 85% of the memory Lambda gives it, unless
// GOMEMLIMIT already set one; nothing outside Lambda or for a size that is not MiB.
func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int64
		ok   bool
	}{
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}, 912680550, true}, // floor(1 GiB * 0.85)
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128"}, 114085068, true},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": " 10240 "}, 9126805504, true},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "GOMEMLIMIT": "900MiB"}, 0, false},
		{map[string]string{}, 0, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, 0, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "0"}, 0, false},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "-5"}, 0, false},
	} {
		got, ok := MemoryLimit(env(tc.env))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: got %d, %v; want %d, %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
}
