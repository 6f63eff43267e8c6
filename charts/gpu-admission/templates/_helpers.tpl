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
{{- range $key := list "resourceClaims" "deviceClasses" "namespaces" "configMaps" "secrets" -}}
{{- $_ := set $lookups $key (or (eq (toString (dig $key false $lookups)) "true") (eq (toString (dig $key false (default dict $v.lookups))) "true")) -}}
{{- end -}}
{{- $_ := set $p "lookups" $lookups -}}
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
{{- if or $l.resourceClaims $l.deviceClasses $l.namespaces $l.configMaps $l.secrets -}}true{{- end -}}
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

{{- define "gpu-admission.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: {{ include "gpu-admission.excludedNamespacesJson" . }}
{{- end -}}

{{/* ---------------------------------------------------------------- certificates */}}

{{/*
The chart-generated CA and serving certificate, as JSON {crt, key, ca} (base64). Generated once per
render (memoised on the root context, so the Secret and both webhook configurations agree) and taken
from the existing Secret when there is one, so upgrades keep the same certificate.
*/}}
{{- define "gpu-admission.generatedTLS" -}}
{{- if not (hasKey $ "gpuAdmissionGeneratedTLS") -}}
{{- $name := include "gpu-admission.tlsSecretName" $ -}}
{{- $existing := lookup "v1" "Secret" $.Release.Namespace $name -}}
{{- $crt := dig "data" "tls.crt" "" $existing -}}
{{- $key := dig "data" "tls.key" "" $existing -}}
{{- $ca := dig "data" "ca.crt" "" $existing -}}
{{- $tls := dict -}}
{{- if and $crt $key $ca -}}
{{- $tls = dict "crt" $crt "key" $key "ca" $ca -}}
{{- else -}}
{{- $days := int $.Values.certificates.generate.validityDays -}}
{{- $svc := include "gpu-admission.fullname" $ -}}
{{- $host := include "gpu-admission.serviceHost" $ -}}
{{- /* ECDSA P-256 keys: as strong as RSA-3072 for TLS, and generated in milliseconds. */ -}}
{{- $authority := genCAWithKey (printf "%s-ca" $svc) $days (genPrivateKey "ecdsa") -}}
{{- $dns := list $svc (printf "%s.%s" $svc $.Release.Namespace) $host (printf "%s.cluster.local" $host) -}}
{{- $cert := genSignedCertWithKey $host nil $dns $days $authority (genPrivateKey "ecdsa") -}}
{{- $tls = dict "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc) "ca" ($authority.Cert | b64enc) -}}
{{- end -}}
{{- $_ := set $ "gpuAdmissionGeneratedTLS" $tls -}}
{{- end -}}
{{- get $ "gpuAdmissionGeneratedTLS" | toJson -}}
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
before meta is read, or ""). Every clause mirrors a rule's trigger (DESIGN.md sections 4 and 6):
  - DRA claims (resourceClaims) and extended resources (any resource name with a "/": nvidia.com/*,
    deviceclass.resource.kubernetes.io/*, and names a DeviceClass serves through extendedResourceName);
  - a device-plugin cohort's runtime class (hide-gpus, runtime-class-conflict);
  - a nodeSelector or required node affinity on a cohort's node label keys (cohort by selector);
  - a namespace with a configured default cohort (namespaceCohorts);
  - visible-devices variables in env, and envFrom when ConfigMap/Secret lookups can read its keys;
  - hostPath volumes, mounts under the toolkit's device-list directory, CDI/NRI device annotations.
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
{{- $clauses = append $clauses (printf "(%shas(%s.annotations) && %s.annotations.exists(k, k.startsWith('cdi.k8s.io/') || k.startsWith('nvidia.cdi.k8s.io/') || k.startsWith('cdi-devices.nri.io/')))" $guard .meta .meta) -}}
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
{{- if $out -}}
matchConditions:
{{- range $out }}
  - name: {{ .name }}
    expression: |-
      {{- .expression | nindent 6 }}
{{- end }}
{{- end -}}
{{- end -}}
