{{/* ---------------------------------------------------------------- names and labels */}}

{{- define "gpu-admission.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-admission.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpu-admission.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-admission.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-admission.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpu-admission.labels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
{{ include "gpu-admission.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gpu-admission
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gpu-admission.webhookSelectorLabels" -}}
{{ include "gpu-admission.selectorLabels" . }}
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "gpu-admission.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gpu-admission.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gpu-admission.auditName" -}}
{{- printf "%s-audit" (include "gpu-admission.fullname" .) | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-admission.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "gpu-admission.fullname" .)) .Values.certificates.secretName -}}
{{- end -}}

{{- define "gpu-admission.servingCertificateName" -}}
{{- printf "%s-serving" (include "gpu-admission.fullname" .) -}}
{{- end -}}

{{- define "gpu-admission.priorityClassName" -}}
{{- if .Values.priorityClassName -}}
{{- .Values.priorityClassName -}}
{{- else if .Values.priorityClass.create -}}
{{- printf "%s-critical" (include "gpu-admission.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "gpu-admission.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The port the server binds: on the host network, the node port chosen for it. */}}
{{- define "gpu-admission.serverPort" -}}
{{- if .Values.hostNetwork.enabled -}}{{ int .Values.hostNetwork.port }}{{- else -}}{{ int .Values.server.port }}{{- end -}}
{{- end -}}

{{- define "gpu-admission.healthPort" -}}
{{- if .Values.hostNetwork.enabled -}}{{ int .Values.hostNetwork.healthPort }}{{- else -}}{{ int .Values.server.healthPort }}{{- end -}}
{{- end -}}

{{- define "gpu-admission.dnsPolicy" -}}
{{- if .Values.dnsPolicy -}}
{{- .Values.dnsPolicy -}}
{{- else if .Values.hostNetwork.enabled -}}
ClusterFirstWithHostNet
{{- end -}}
{{- end -}}

{{/* The pod and container securityContexts: the chart's, with podSecurityContext and
containerSecurityContext merged over them. */}}
{{- define "gpu-admission.podSecurityContext" -}}
{{- $sc := dict "runAsNonRoot" true "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- range $key := list "runAsUser" "runAsGroup" "fsGroup" -}}
{{- $id := index $.Values.securityContext $key -}}
{{- if not (kindIs "invalid" $id) -}}
{{- $_ := set $sc $key (int $id) -}}
{{- end -}}
{{- end -}}
{{- toYaml (mustMergeOverwrite $sc (deepCopy .Values.podSecurityContext)) -}}
{{- end -}}

{{- define "gpu-admission.containerSecurityContext" -}}
{{- $sc := dict "allowPrivilegeEscalation" false "privileged" false "readOnlyRootFilesystem" true "runAsNonRoot" true
  "capabilities" (dict "drop" (list "ALL")) "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- toYaml (mustMergeOverwrite $sc (deepCopy .Values.containerSecurityContext)) -}}
{{- end -}}

{{/*
Findings of checkov (a scanner of rendered manifests) that this chart means, stated on the objects with
their reasons (checkov.io/skipN annotations), so that a scan lists them as skipped instead of failing.
Arguments: root, pod ("webhook" or "audit"). A finding goes away, and its annotation with it, once the
value that causes it is set (image.digest, networkPolicy.enabled, no lookups).
*/}}
{{- define "gpu-admission.checkovSkips" -}}
{{- $root := .root -}}
{{- $cpu := "CKV_K8S_11=no CPU limit on purpose: CFS throttling would add latency to every admission call; the CPU request reserves what the webhook needs" -}}
{{- if eq .pod "audit" -}}
{{- $cpu = "CKV_K8S_11=no CPU limit on purpose: a limit would only slow the batch audit down; its CPU request reserves what it needs, and its memory is limited" -}}
{{- else if eq .pod "cleanup" -}}
{{- $cpu = "CKV_K8S_11=no CPU limit on purpose: the hook makes two API calls and exits; its CPU request reserves what it needs, and its memory is limited" -}}
{{- end -}}
{{- $skips := list $cpu
  "CKV_K8S_15=pullPolicy IfNotPresent: the image is pinned by a version tag or image.digest, so Always would only add a registry round trip to every start" -}}
{{- if not $root.Values.image.digest -}}
{{- $skips = append $skips "CKV_K8S_43=image.digest is empty: the image is pinned by its version tag; set image.digest to pin it by digest" -}}
{{- end -}}
{{- if and (eq .pod "webhook") (not $root.Values.networkPolicy.enabled) -}}
{{- $skips = append $skips "CKV2_K8S_6=the NetworkPolicy is left to the user (networkPolicy.enabled): the apiserver's source addresses differ per cluster" -}}
{{- end -}}
{{- if kindIs "invalid" (index $root.Values.securityContext "runAsUser") -}}
{{- $skips = append $skips "CKV_K8S_40=securityContext.runAsUser is null: the platform assigns the user (OpenShift's restricted SCC picks one from the namespace's high range); runAsNonRoot still holds" -}}
{{- end -}}
{{- if and (eq .pod "webhook") $root.Values.hostNetwork.enabled -}}
{{- $skips = append $skips "CKV_K8S_19=hostNetwork.enabled: the control plane cannot reach pod IPs here (custom CNI, Hybrid Nodes without a routable pod CIDR)" -}}
{{- $skips = append $skips "CKV_K8S_26=hostNetwork.enabled: the hostPort is declared so that the scheduler never puts two replicas on one node's port" -}}
{{- end -}}
{{- if eq .pod "cleanup" -}}
{{- $skips = append $skips "CKV2_K8S_6=the hook pod accepts no connections; it calls the API server once at uninstall and exits" -}}
{{- $skips = append $skips "CKV_K8S_38=the service account token is mounted because the hook deletes the release's two webhook configurations; RBAC grants only that, by name" -}}
{{- else if or (eq .pod "audit") (include "gpu-admission.anyLookup" $root) -}}
{{- $skips = append $skips "CKV_K8S_38=the service account token is mounted because the pod reads the cluster (the audit, or the lookups enabled); RBAC grants only that" -}}
{{- end -}}
{{- range $i, $skip := $skips }}
checkov.io/skip{{ add1 $i }}: {{ $skip | quote }}
{{- end -}}
{{- end -}}

{{/* The label matchers that pick this release's series (PrometheusRule). */}}
{{- define "gpu-admission.metricSelector" -}}
{{- default (printf "job=\"%s\",namespace=\"%s\"" (include "gpu-admission.fullname" .) .Release.Namespace) .Values.prometheusRule.selector -}}
{{- end -}}

{{- define "gpu-admission.alertLabels" -}}
severity: {{ .severity }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The DNS name the apiserver verifies the serving certificate against. */}}
{{- define "gpu-admission.serviceHost" -}}
{{- printf "%s.%s.svc" (include "gpu-admission.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/* Where the server reads its files (the server's defaults; set explicitly in the pod env). */}}
{{- define "gpu-admission.policyDir" -}}/etc/gpu-admission/policy{{- end -}}
{{- define "gpu-admission.tlsDir" -}}/etc/gpu-admission/tls{{- end -}}

{{/* ---------------------------------------------------------------- the policy document */}}

{{/* A rule action as the loader reads it: an unquoted `off` in a values file is YAML's false. */}}
{{- define "gpu-admission.normaliseRules" -}}
{{- $out := dict -}}
{{- range $rule, $action := . -}}
{{- if kindIs "bool" $action -}}
{{- $_ := set $out $rule (ternary "enforce" "off" $action) -}}
{{- else if kindIs "map" $action -}}
{{- $entry := deepCopy $action -}}
{{- if and (hasKey $entry "action") (kindIs "bool" $entry.action) -}}
{{- $_ := set $entry "action" (ternary "enforce" "off" $entry.action) -}}
{{- end -}}
{{- $_ := set $out $rule $entry -}}
{{- else -}}
{{- $_ := set $out $rule $action -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
The effective policy (as JSON): `policy` with the convenience values applied. Every other template
reads the policy through this one definition (built once per render), so the ConfigMap, the RBAC, the
webhooks' namespaceSelector and matchConditions can never disagree.
*/}}
{{- define "gpu-admission.policyJson" -}}
{{- if not (hasKey $ "gpuAdmissionPolicyJson") -}}
{{- $_ := set $ "gpuAdmissionPolicyJson" (include "gpu-admission.buildPolicyJson" $) -}}
{{- end -}}
{{- get $ "gpuAdmissionPolicyJson" -}}
{{- end -}}

{{- define "gpu-admission.buildPolicyJson" -}}
{{- $v := .Values -}}
{{- $p := deepCopy (default dict $v.policy) -}}
{{- /* What a JSON Schema cannot say (values.schema.json embeds the policy's schema), refused at render
as the server's loader would refuse it at start. */ -}}
{{- $names := list -}}
{{- $selectors := dict -}}
{{- range (default list $p.cohorts) -}}
{{- if and (kindIs "map" .) (hasKey . "name") -}}
{{- if has .name $names -}}
{{- fail (printf "policy.cohorts: cohort name %q is used twice" .name) -}}
{{- end -}}
{{- $names = append $names .name -}}
{{- $selector := toJson (default dict .nodeLabels) -}}
{{- if hasKey $selectors $selector -}}
{{- fail (printf "policy.cohorts: cohorts %q and %q select the same nodes; each GPU node belongs to exactly one cohort" (get $selectors $selector) .name) -}}
{{- end -}}
{{- $_ := set $selectors $selector .name -}}
{{- end -}}
{{- end -}}
{{- range $ns, $cohort := (default dict $p.namespaceCohorts) -}}
{{- if not (has $cohort $names) -}}
{{- fail (printf "policy.namespaceCohorts.%s: unknown cohort %q; cohorts are %s" $ns $cohort (join ", " $names)) -}}
{{- end -}}
{{- end -}}
{{- $classes := list -}}
{{- range (default list $p.deviceClasses) -}}
{{- if kindIs "map" . -}}
{{- $classes = append $classes .name -}}
{{- end -}}
{{- end -}}
{{- range $i, $c := (default list $p.cohorts) -}}
{{- range (and (kindIs "map" $c) (default list $c.deviceClasses)) -}}
{{- if not (has . $classes) -}}
{{- fail (printf "policy.cohorts[%d].deviceClasses: unknown DeviceClass %q; list it under deviceClasses" $i .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $v.mode -}}
{{- $_ := set $p "mode" $v.mode -}}
{{- end -}}
{{- $_ := set $p "serviceNamespace" .Release.Namespace -}}
{{- $exempt := list -}}
{{- range (concat (default list $p.exemptNamespaces) (default list $v.exemptNamespaces)) -}}
{{- if not (has . $exempt) -}}
{{- $exempt = append $exempt . -}}
{{- end -}}
{{- end -}}
{{- $_ := set $p "exemptNamespaces" $exempt -}}
{{- $rules := include "gpu-admission.normaliseRules" (default dict $p.rules) | fromJson -}}
{{- range $rule, $action := (include "gpu-admission.normaliseRules" (default dict $v.rules) | fromJson) -}}
{{- $_ := set $rules $rule $action -}}
{{- end -}}
{{- $_ := set $p "rules" $rules -}}
{{- $overrides := list -}}
{{- range (default list $p.namespaceOverrides) -}}
{{- $o := deepCopy . -}}
{{- if and (kindIs "map" $o) (hasKey $o "rules") (kindIs "map" $o.rules) -}}
{{- $_ := set $o "rules" (include "gpu-admission.normaliseRules" $o.rules | fromJson) -}}
{{- end -}}
{{- $overrides = append $overrides $o -}}
{{- end -}}
{{- $_ := set $p "namespaceOverrides" $overrides -}}
{{- $lookups := deepCopy (default dict $p.lookups) -}}
{{- range $key := list "resourceClaims" "deviceClasses" "namespaces" "configMaps" "secrets" "nodes" "resourceSlices" "runtimeClasses" "nodePools" "gpuOperator" "pods" -}}
{{- $_ := set $lookups $key (or (eq (toString (dig $key false $lookups)) "true") (eq (toString (dig $key false (default dict $v.lookups))) "true")) -}}
{{- end -}}
{{- $_ := set $p "lookups" $lookups -}}
{{- $inTree := default dict $v.inTree -}}
{{- if or $inTree.validation $inTree.mutation -}}
{{- $_ := set $p "inTree" (dict "validation" (eq (toString $inTree.validation) "true") "mutation" (eq (toString $inTree.mutation) "true")) -}}
{{- end -}}
{{- toJson $p -}}
{{- end -}}

{{- define "gpu-admission.policy" -}}
{{- include "gpu-admission.policyJson" . | fromJson | toYaml -}}
{{- end -}}

{{/* The effective lookups as a dict of booleans. */}}
{{- define "gpu-admission.lookupsJson" -}}
{{- (include "gpu-admission.policyJson" . | fromJson).lookups | toJson -}}
{{- end -}}

{{- define "gpu-admission.anyLookup" -}}
{{- $l := include "gpu-admission.lookupsJson" . | fromJson -}}
{{- if or $l.resourceClaims $l.deviceClasses $l.namespaces $l.configMaps $l.secrets $l.nodes $l.resourceSlices $l.runtimeClasses $l.nodePools $l.gpuOperator $l.pods -}}true{{- end -}}
{{- end -}}

{{/* Namespaces the webhooks never see: kube-system, the release namespace, the exempt ones. */}}
{{- define "gpu-admission.excludedNamespacesJson" -}}
{{- $p := include "gpu-admission.policyJson" . | fromJson -}}
{{- $out := list "kube-system" .Release.Namespace -}}
{{- range $p.exemptNamespaces -}}
{{- $out = append $out . -}}
{{- end -}}
{{- $out | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/* namespaceSelector: the exempt namespaces left out by name, and webhooks.namespaceSelector required too;
objectSelector: webhooks.objectSelector. */}}
{{- define "gpu-admission.selectors" -}}
{{- $user := default dict .Values.webhooks.namespaceSelector -}}
namespaceSelector:
  {{- with $user.matchLabels }}
  matchLabels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: {{ include "gpu-admission.excludedNamespacesJson" . }}
    {{- with $user.matchExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- with .Values.webhooks.objectSelector }}
objectSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* ---------------------------------------------------------------- certificates */}}

{{/*
The chart-generated CA and serving certificate, as JSON {crt, key, ca, notAfter} (base64, and the serving
certificate's expiry in RFC 3339). Decided once per render (memoised on the root context, so the Secret and
both webhook configurations agree) from the existing Secret, which `lookup` reads on install and upgrade.
*/}}
{{- define "gpu-admission.generatedTLS" -}}
{{- if not (hasKey $ "gpuAdmissionGeneratedTLS") -}}
{{- $existing := lookup "v1" "Secret" $.Release.Namespace (include "gpu-admission.tlsSecretName" $) -}}
{{- $g := $.Values.certificates.generate -}}
{{- $tls := include "gpu-admission.tlsFor" (dict "existing" $existing "now" now "days" $g.validityDays
  "renewBeforeDays" $g.renewBeforeDays "service" (include "gpu-admission.fullname" $) "namespace" $.Release.Namespace) -}}
{{- $_ := set $ "gpuAdmissionGeneratedTLS" ($tls | fromJson) -}}
{{- end -}}
{{- get $ "gpuAdmissionGeneratedTLS" | toJson -}}
{{- end -}}

{{/*
Keep or rotate. Arguments: existing (the Secret as the API returns it, or empty), now, days (validity),
renewBeforeDays, service, namespace. The existing pair is kept while its serving certificate (the Secret's
gpu-admission.io/not-after annotation) is valid for more than renewBeforeDays; otherwise, or when that is
unknown, a new CA and certificate are made, and the caBundle trusts the new CA and the previous one: pods
still serving the old certificate until their Secret volume updates keep being trusted.
*/}}
{{- define "gpu-admission.tlsFor" -}}
{{- $existing := default dict .existing -}}
{{- $crt := dig "data" "tls.crt" "" $existing -}}
{{- $key := dig "data" "tls.key" "" $existing -}}
{{- $ca := dig "data" "ca.crt" "" $existing -}}
{{- $notAfter := dig "metadata" "annotations" "gpu-admission.io/not-after" "" $existing -}}
{{- $left := -1 -}}
{{- if $notAfter -}}
{{- $expiry := toDate "2006-01-02T15:04:05Z07:00" $notAfter -}}
{{- $left = sub (int64 (unixEpoch $expiry)) (int64 (unixEpoch .now)) -}}
{{- end -}}
{{- $renew := mul (int .renewBeforeDays) 86400 -}}
{{- if and $crt $key $ca (or (eq (int .renewBeforeDays) 0) (gt (int64 $left) (int64 $renew))) -}}
{{- dict "crt" $crt "key" $key "ca" $ca "notAfter" $notAfter "rotated" false | toJson -}}
{{- else -}}
{{- $days := int .days -}}
{{- $svc := .service -}}
{{- $host := printf "%s.%s.svc" $svc .namespace -}}
{{- /* ECDSA P-256 keys: as strong as RSA-3072 for TLS, and generated in milliseconds. */ -}}
{{- $authority := genCAWithKey (printf "%s-ca" $svc) $days (genPrivateKey "ecdsa") -}}
{{- $dns := list $svc (printf "%s.%s" $svc .namespace) $host (printf "%s.cluster.local" $host) -}}
{{- $cert := genSignedCertWithKey $host nil $dns $days $authority (genPrivateKey "ecdsa") -}}
{{- $bundle := $authority.Cert -}}
{{- $previous := regexFind "(?s)-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----" (b64dec $ca) -}}
{{- if $previous -}}
{{- $bundle = printf "%s\n%s\n" (trimSuffix "\n" $authority.Cert) $previous -}}
{{- end -}}
{{- $expires := dateInZone "2006-01-02T15:04:05Z" (.now | dateModify (printf "+%dh" (mul $days 24))) "UTC" -}}
{{- dict "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc) "ca" ($bundle | b64enc) "notAfter" $expires "rotated" true | toJson -}}
{{- end -}}
{{- end -}}

{{/* clientConfig of a webhook: the Service, the path, and the CA unless cert-manager injects it; or, with
webhooks.url, that endpoint outside the cluster and the CA given in certificates.caBundle. */}}
{{- define "gpu-admission.clientConfig" -}}
{{- $root := .root -}}
{{- with $root.Values.webhooks.url }}
clientConfig:
  url: {{ printf "%s%s" (trimSuffix "/" .) $.path | quote }}
  caBundle: {{ required "webhooks.url needs certificates.caBundle: base64 of the PEM CA that signed the endpoint's serving certificate" $root.Values.certificates.caBundle }}
{{- else }}
clientConfig:
  service:
    name: {{ include "gpu-admission.fullname" $root }}
    namespace: {{ $root.Release.Namespace }}
    path: {{ .path }}
    port: {{ int $root.Values.service.port }}
{{- if eq $root.Values.certificates.mode "generate" }}
  caBundle: {{ (include "gpu-admission.generatedTLS" $root | fromJson).ca }}
{{- else if eq $root.Values.certificates.mode "existingSecret" }}
  caBundle: {{ $root.Values.certificates.caBundle }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The webhook runs in the cluster (the Deployment, its Service, TLS Secret, PDB...): not with webhooks.url. */}}
{{- define "gpu-admission.inCluster" -}}
{{- if not .Values.webhooks.url -}}true{{- end -}}
{{- end -}}

{{- define "gpu-admission.webhookAnnotations" -}}
{{- $a := deepCopy (default dict .Values.webhooks.annotations) -}}
{{- if and (eq .Values.certificates.mode "certManager") (include "gpu-admission.inCluster" .) -}}
{{- $_ := set $a "cert-manager.io/inject-ca-from" (printf "%s/%s" .Release.Namespace (include "gpu-admission.servingCertificateName" .)) -}}
{{- end -}}
{{- if $a -}}
annotations:
  {{- toYaml $a | nindent 2 }}
{{- end -}}
{{- end -}}

{{/* ---------------------------------------------------------------- matchConditions (CEL) */}}

{{- define "gpu-admission.celList" -}}
{{- $quoted := list -}}
{{- range . -}}
{{- $quoted = append $quoted (printf "'%s'" .) -}}
{{- end -}}
[{{ join ", " $quoted }}]
{{- end -}}

{{/*
The clauses of "some rule may concern this pod spec", one per line, OR-ed. Arguments: root, spec
(CEL path of the pod spec), meta (CEL path of the pod metadata), metaGuard (a has() that must hold
before meta is read, or ""). Every clause mirrors a rule's trigger (docs/architecture.md: cohort resolution, the rules):
  - DRA claims (resourceClaims) and extended resources (any resource name with a "/": nvidia.com/*,
    deviceclass.resource.kubernetes.io/*, and names a DeviceClass serves through extendedResourceName);
  - a device-plugin cohort's runtime class (hide-gpus, runtime-class-conflict);
  - a nodeSelector or required node affinity on a cohort's node label keys (cohort by selector);
  - a namespace with a configured default cohort (namespaceCohorts);
  - visible-devices variables in env, and envFrom when ConfigMap/Secret lookups can read its keys;
  - hostPath volumes, mounts under the toolkit's device-list directory, CDI/NRI device annotations and a
    platform's device-injection annotations (platformDeviceAnnotations).
*/}}
{{- define "gpu-admission.celGpuRelevant" -}}
{{- $root := .root -}}
{{- $s := .spec -}}
{{- $p := include "gpu-admission.policyJson" $root | fromJson -}}
{{- $keys := list -}}
{{- $runtimes := list "nvidia" -}}
{{- range $p.cohorts -}}
{{- range $k, $_ := (default dict .nodeLabels) -}}
{{- $keys = append $keys $k -}}
{{- end -}}
{{- if eq (toString .mechanism) "device-plugin" -}}
{{- $runtimes = append $runtimes (default "nvidia" .runtimeClassName) -}}
{{- end -}}
{{- end -}}
{{- $keys = $keys | uniq | sortAlpha -}}
{{- $runtimes = $runtimes | uniq | sortAlpha -}}
{{- $variables := list "CUDA_VISIBLE_DEVICES" "NVIDIA_VISIBLE_DEVICES" "NVIDIA_DRIVER_CAPABILITIES" "NVIDIA_MIG_CONFIG_DEVICES" "NVIDIA_MIG_MONITOR_DEVICES" "CUDA_MPS_PIPE_DIRECTORY" "GPU_DEVICE_ORDINAL" -}}
{{- if hasKey $p "visibleDeviceVariables" -}}
{{- if $p.visibleDeviceVariables -}}
{{- $variables = $p.visibleDeviceVariables -}}
{{- end -}}
{{- end -}}
{{- $nsCohorts := keys (default dict $p.namespaceCohorts) | sortAlpha -}}
{{- $envFrom := or $p.lookups.configMaps $p.lookups.secrets -}}
{{- $c := printf "(has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, r.contains('/'))) || (has(c.resources.requests) && c.resources.requests.exists(r, r.contains('/'))))) || (has(c.env) && c.env.exists(e, has(e.name) && e.name in %s)) || (has(c.volumeMounts) && c.volumeMounts.exists(m, has(m.mountPath) && m.mountPath.contains('nvidia-container-devices')))" (include "gpu-admission.celList" $variables) -}}
{{- if $envFrom -}}
{{- $c = printf "%s || has(c.envFrom)" $c -}}
{{- end -}}
{{- $clauses := list -}}
{{- $clauses = append $clauses (printf "has(%s.resourceClaims)" $s) -}}
{{- $clauses = append $clauses (printf "%s.containers.exists(c, %s)" $s $c) -}}
{{- $clauses = append $clauses (printf "(has(%s.initContainers) && %s.initContainers.exists(c, %s))" $s $s $c) -}}
{{- $clauses = append $clauses (printf "(has(%s.ephemeralContainers) && %s.ephemeralContainers.exists(c, %s))" $s $s $c) -}}
{{- $clauses = append $clauses (printf "(has(%s.runtimeClassName) && %s.runtimeClassName in %s)" $s $s (include "gpu-admission.celList" $runtimes)) -}}
{{- $clauses = append $clauses (printf "(has(%s.nodeSelector) && %s.nodeSelector.exists(k, k in %s))" $s $s (include "gpu-admission.celList" $keys)) -}}
{{- $na := printf "%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution" $s -}}
{{- $clauses = append $clauses (printf "(has(%s.affinity) && has(%s.affinity.nodeAffinity) && has(%s) && has(%s.nodeSelectorTerms) && %s.nodeSelectorTerms.exists(t, has(t.matchExpressions) && t.matchExpressions.exists(x, x.key in %s)))" $s $s $na $na $na (include "gpu-admission.celList" $keys)) -}}
{{- $clauses = append $clauses (printf "(has(%s.volumes) && %s.volumes.exists(v, has(v.hostPath)))" $s $s) -}}
{{- $guard := "" -}}
{{- if .metaGuard -}}
{{- $guard = printf "%s && " .metaGuard -}}
{{- end -}}
{{- $platform := list "devices.gke.io/container." -}}
{{- if hasKey $p "platformDeviceAnnotations" -}}
{{- $platform = default list $p.platformDeviceAnnotations -}}
{{- end -}}
{{- $injected := "" -}}
{{- range $platform -}}
{{- $injected = printf "%s || k.startsWith('%s')" $injected . -}}
{{- end -}}
{{- $clauses = append $clauses (printf "(%shas(%s.annotations) && %s.annotations.exists(k, k.startsWith('cdi.k8s.io/') || k.startsWith('nvidia.cdi.k8s.io/') || k.startsWith('cdi-devices.nri.io/')%s))" $guard .meta .meta $injected) -}}
{{- if $nsCohorts -}}
{{- $clauses = append $clauses (printf "request.namespace in %s" (include "gpu-admission.celList" $nsCohorts)) -}}
{{- end -}}
{{- join "\n|| " $clauses -}}
{{- end -}}

{{/*
matchConditions of one webhook. Arguments: root, spec, meta, metaGuard (see above), specField (the
top-level field compared on UPDATE: "spec", or "template" for PodTemplate), pods (node requests are
skipped for pods), update (the webhook sees UPDATEs), gpu (the object is a pod or pod template).
*/}}
{{- define "gpu-admission.matchConditions" -}}
{{- $root := .root -}}
{{- $mc := $root.Values.webhooks.matchConditions -}}
{{- $lookups := include "gpu-admission.lookupsJson" $root | fromJson -}}
{{- $out := list -}}
{{- if and .pods $mc.skipNodeRequests -}}
{{- $out = append $out (dict "name" "skip-node-mirror-pods" "expression" "!request.userInfo.username.startsWith('system:node:')") -}}
{{- end -}}
{{- if and .update $mc.skipUnchangedUpdates -}}
{{- $f := .specField -}}
{{- $out = append $out (dict "name" "skip-unchanged-updates" "expression" (printf "request.operation != 'UPDATE' || !has(object.%s) || !has(oldObject.%s) || object.%s != oldObject.%s" $f $f $f $f)) -}}
{{- end -}}
{{- if and .gpu $mc.skipNonGpuPods (not $lookups.namespaces) -}}
{{- $out = append $out (dict "name" "skip-pods-no-rule-concerns" "expression" (include "gpu-admission.celGpuRelevant" .)) -}}
{{- end -}}
{{- range $mc.extra -}}
{{- $out = append $out (dict "name" .name "expression" .expression) -}}
{{- end -}}
{{- if $out -}}
matchConditions:
{{- range $out }}
  - name: {{ .name }}
    expression: |-
      {{- .expression | nindent 6 }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
The infrastructure webhook (rule allocation-owner): one allocation owner per GPU. It sees what the other
webhooks never do, each narrowed by a matchCondition so that ordinary objects never reach it:
  - DaemonSets in the exempt namespaces (infrastructure lives there; elsewhere the workloads webhook sees them),
    only when a container runs an allocation owner: the nvidia-device-plugin / gpu-kubelet-plugin program in
    its command (or the arguments of that command's shell), or, without a command, NVIDIA's device-plugin or
    DRA-driver image (GFD and the MPS control daemon share the plugin's image and start other programs)
    (webhook/objects/owners.py OWNER_IMAGES, OWNER_PROGRAMS; a test compares them);
  - the GPU Operator's ClusterPolicy, GPUCluster and NVIDIADriver (where their CRDs are served);
  - Node UPDATEs, only when a label the rule reads changes: a cohort's label keys, nvidia.com/mps.capable
    (status updates go to nodes/status, never here; heartbeats are Leases; GFD's and NFD's own labels never
    reach it). DeviceClasses reach the dra webhook already.
Not rendered when the policy turns allocation-owner off.
*/}}
{{- define "gpu-admission.infrastructureWebhook" -}}
{{- $p := include "gpu-admission.policyJson" . | fromJson -}}
{{- $action := get (default dict $p.rules) "allocation-owner" -}}
{{- if ne (toString $action) "off" -}}
{{- $ds := "object.spec.template.spec" -}}
{{- $names := "c.image.contains('k8s-device-plugin') || c.image.contains('k8s-dra-driver') || c.image.contains('dra-driver-nvidia-gpu')" -}}
{{- $programs := "w.contains('nvidia-device-plugin') || w.contains('gpu-kubelet-plugin')" -}}
{{- /* What the engine reads: the program the command starts (or a shell script names), else the image's entrypoint. */ -}}
{{- $c := printf "(has(c.command) && (c.command.exists(w, %s) || (has(c.args) && c.args.exists(w, %s)))) || (!has(c.command) && has(c.image) && (%s))" $programs $programs $names -}}
{{- $owner := printf "%s.containers.exists(c, %s) || (has(%s.initContainers) && %s.initContainers.exists(c, %s))" $ds $c $ds $ds $c -}}
{{- /* The node labels the rule reads: the cohorts' label keys and the MPS label. */ -}}
{{- $keys := list "nvidia.com/mps.capable" -}}
{{- range $p.cohorts -}}
{{- range $k, $_ := (default dict .nodeLabels) -}}
{{- $keys = append $keys $k -}}
{{- end -}}
{{- end -}}
{{- $watched := include "gpu-admission.celList" ($keys | uniq | sortAlpha) -}}
- name: {{ printf "infrastructure.validate.%s" .Values.webhooks.domain }}
  admissionReviewVersions: [v1]
  sideEffects: None
  matchPolicy: Equivalent
  failurePolicy: {{ .Values.webhooks.validating.failurePolicy }}
  timeoutSeconds: {{ int .Values.webhooks.validating.timeoutSeconds }}
  {{- include "gpu-admission.clientConfig" (dict "root" . "path" "/validate") | nindent 2 }}
  {{- /* Namespaced DaemonSets: the exempt namespaces only (the workloads webhook sees the others). The
  cluster-scoped kinds are matched whatever the namespaceSelector says. */}}
  {{- $user := default dict .Values.webhooks.namespaceSelector }}
  namespaceSelector:
    {{- with $user.matchLabels }}
    matchLabels:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values: {{ include "gpu-admission.excludedNamespacesJson" . }}
      {{- with $user.matchExpressions }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
  {{- with .Values.webhooks.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  rules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [daemonsets]
      scope: Namespaced
    - apiGroups: [nvidia.com]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [clusterpolicies]
      scope: Cluster
    - apiGroups: [nvidia.com]
      apiVersions: [v1alpha1]
      operations: [CREATE, UPDATE]
      resources: [gpuclusters, nvidiadrivers]
      scope: Cluster
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [UPDATE]
      resources: [nodes]
      scope: Cluster
  matchConditions:
    - name: daemon-sets-running-an-allocation-owner
      expression: |-
        request.resource.resource != 'daemonsets' || {{ $owner }}
    - name: node-label-changes
      expression: |-
        request.resource.resource != 'nodes' || {{ $watched }}.exists(k, (has(oldObject.metadata.labels) && k in oldObject.metadata.labels) != (has(object.metadata.labels) && k in object.metadata.labels) || (has(oldObject.metadata.labels) && has(object.metadata.labels) && k in oldObject.metadata.labels && k in object.metadata.labels && oldObject.metadata.labels[k] != object.metadata.labels[k]))
    {{- range .Values.webhooks.matchConditions.extra }}
    - name: {{ .name }}
      expression: |-
        {{- .expression | nindent 8 }}
    {{- end }}
{{- end -}}
{{- end -}}
