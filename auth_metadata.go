package mcp

// ProtectedResourceMetadata is the OAuth 2.0 Protected Resource Metadata
// document of RFC 9728: what an MCP server publishes at
// /.well-known/oauth-protected-resource so that a client can find the
// authorization servers that issue its tokens. Both sides: a server serves
// it, a client reads it.
type ProtectedResourceMetadata struct {
	// Resource is the server's canonical URL, the audience its tokens
	// must carry. Required.
	Resource string `json:"resource"`
	// AuthorizationServers lists the issuer URLs of the authorization
	// servers that issue tokens for Resource.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// JWKSURI is where the resource's own signing keys are, if it has any.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported lists the scopes a client may ask for.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported lists how a token may be sent; MCP allows
	// only "header".
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceSigningAlgValuesSupported lists the JWS algorithms the
	// resource signs with.
	ResourceSigningAlgValuesSupported []string `json:"resource_signing_alg_values_supported,omitempty"`
	// ResourceName is a human-readable name of the resource.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is a URL of documentation for developers.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// ResourcePolicyURI and ResourceTOSURI are the resource's policy and
	// terms of service pages.
	ResourcePolicyURI string `json:"resource_policy_uri,omitempty"`
	ResourceTOSURI    string `json:"resource_tos_uri,omitempty"`
	// DPoPSigningAlgValuesSupported lists the algorithms the resource
	// accepts DPoP proofs signed with (RFC 9449); see
	// [DPoPVerifier.Advertise].
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired says the resource accepts only
	// access tokens bound to a key with DPoP.
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
}

// AuthorizationServerMetadata is the part of an authorization server's
// metadata (RFC 8414, or OpenID Connect discovery) that an MCP client
// uses. Client side.
type AuthorizationServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint                              string   `json:"token_endpoint,omitempty"`
	RegistrationEndpoint                       string   `json:"registration_endpoint,omitempty"`
	JWKSURI                                    string   `json:"jwks_uri,omitempty"`
	IntrospectionEndpoint                      string   `json:"introspection_endpoint,omitempty"`
	RevocationEndpoint                         string   `json:"revocation_endpoint,omitempty"`
	ScopesSupported                            []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported                     []string `json:"response_types_supported,omitempty"`
	GrantTypesSupported                        []string `json:"grant_types_supported,omitempty"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported,omitempty"`
	// ClientIDMetadataDocumentSupported says the server accepts an https
	// URL of a client metadata document as client_id.
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
	// AuthorizationResponseIssParameterSupported says the server puts
	// its issuer in the authorization response (RFC 9207).
	AuthorizationResponseIssParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`
}
