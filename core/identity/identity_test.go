package identity

import "testing"

func TestNormalizeARN(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// an assumed role is its role, whatever the session: two sessions are one principal
		{"arn:aws:sts::123456789012:assumed-role/archmax-client/dana", "arn:aws:iam::123456789012:role/archmax-client"},
		{"arn:aws:sts::123456789012:assumed-role/archmax-client/botocore-session-1700000000", "arn:aws:iam::123456789012:role/archmax-client"},
		// IAM Identity Center: the role lives under /aws-reserved/sso.amazonaws.com/, STS names no path
		{"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Approver_0a1b2c/alice@example.com", "arn:aws:iam::123456789012:role/AWSReservedSSO_Approver_0a1b2c"},
		{"arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Approver_0a1b2c", "arn:aws:iam::123456789012:role/AWSReservedSSO_Approver_0a1b2c"},
		// a configured role ARN with a path matches the path-less ARN STS reports
		{"arn:aws:iam::123456789012:role/team/payments/app", "arn:aws:iam::123456789012:role/app"},
		{"arn:aws:iam::123456789012:role/app", "arn:aws:iam::123456789012:role/app"},
		{"arn:aws:iam::123456789012:user/ops/alice", "arn:aws:iam::123456789012:user/alice"},
		{"arn:aws-cn:sts::123456789012:assumed-role/r/s", "arn:aws-cn:iam::123456789012:role/r"},
		{"arn:aws-us-gov:iam::123456789012:root", "arn:aws-us-gov:iam::123456789012:root"},
		{"arn:aws:sts::123456789012:federated-user/bob", "arn:aws:sts::123456789012:federated-user/bob"},
		// not principals
		{"arn:aws:sts::123456789012:assumed-role/only-role", ""},
		{"arn:aws:sts::123456789012:assumed-role//s", ""},
		{"arn:aws:iam::123456789012:role/", ""},
		{"arn:aws:iam::123456789012:role/path/", ""},
		{"arn:aws:iam::123456789012:group/admins", ""},
		{"arn:aws:s3:::bucket", ""},
		{"arn:aws:iam:::role/x", ""},
		{"AROAEXAMPLE:dana", ""},
		{"", ""},
	} {
		got, ok := NormalizeARN(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("NormalizeARN(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		p    Principal
		want string
	}{
		{Principal{}, ""},
		{Principal{Kind: JWT, ID: "6418b458", Issuer: "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc"}, "jwt:https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc#6418b458"},
		// the first '#' ends the issuer: one in an issuer cannot forge another principal's key
		{Principal{Kind: JWT, ID: "b", Issuer: "x#a"}, "jwt:x%23a#b"},
		{Principal{Kind: JWT, ID: "a#b", Issuer: "x"}, "jwt:x#a#b"},
		{Principal{Kind: JWT, ID: "b", Issuer: "50%"}, "jwt:50%25#b"},
		{Principal{Kind: IAM, ID: "arn:aws:iam::1:role/r"}, "iam:arn:aws:iam::1:role/r"},
		{LocalPrincipal(""), "local:local"},
		{LocalPrincipal(" dana "), "local:dana"},
		{EventSource("orders.app", "123456789012"), "event:123456789012#orders.app"},
		{Wake, "system:wake"},
	} {
		if got := tc.p.Key(); got != tc.want {
			t.Errorf("%+v.Key() = %q, want %q", tc.p, got, tc.want)
		}
	}
	a := Principal{Kind: JWT, ID: "a", Issuer: "https://i/"}
	if !a.Same(a) || a.Same(Principal{Kind: JWT, ID: "a", Issuer: "https://other/"}) || a.Same(Principal{Kind: IAM, ID: "a"}) || (Principal{}).Same(Principal{}) {
		t.Error("Same compares kind, issuer and id of non-zero principals")
	}
}
