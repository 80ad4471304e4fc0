import t from 'tap'
import { compileTemplate, loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { chartWith, failure } from './support/chart.ts'

const renderWith = (files: Record<string, string | null>, spec: Record<string, unknown> = { size: 1 }) =>
  renderInstance(loadChart(chartWith(files)), { name: 'x', namespace: 'default', spec })


t.test('an error thrown in a template names the file and line', async (t) => {
  const err = failure(() => renderWith({ 'templates/extra.ejs': 'a: 1\n<% if (true) { -%>\n<% fail("the extra template failed") %>\n<% } -%>\n' }))
  t.equal(err.kind, 'template')
  t.match(err.problems[0], /^templates\/extra\.ejs:3: the extra template failed\n/)
})

t.test('a missing value names the file and line', async (t) => {
  const err = failure(() => renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: <%= values.nothing %>\n' }))
  t.match(err.problems[0], /^templates\/extra\.ejs:4: value is undefined/)
})

t.test('required() stops with its message at its line', async (t) => {
  const err = failure(() => renderWith({ 'templates/extra.ejs': '\n\n<%= required(values.nothing, "values.nothing is required") %>\n' }))
  t.match(err.problems[0], /^templates\/extra\.ejs:3: values\.nothing is required/)
})

t.test('a syntax error names the file and line', async (t) => {
  const err = failure(() => loadChart(chartWith({ 'templates/extra.ejs': 'a: 1\nb: 2\n<% if (values.size > { %>\n' })))
  t.equal(err.kind, 'template')
  t.match(err.problems[0], /^templates\/extra\.ejs:3: /)
})

t.test('raw output <%- is refused with its line', async (t) => {
  const err = failure(() => loadChart(chartWith({ 'templates/extra.ejs': 'a: 1\nb: <%- values.size %>\n' })))
  t.match(err.problems[0], /^templates\/extra\.ejs:2: raw output "<%-" is not allowed/)
  t.doesNotThrow(() => compileTemplate('t.ejs', 'literal: "<%%- not a tag"\n'), 'an escaped <%% is literal text')
})

t.test('a YAML error names the template, its line, and the line of its output', async (t) => {
  const err = failure(() => renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n' }))
  t.equal(err.kind, 'yaml')
  t.match(err.problems[0], /^templates\/extra\.ejs:5: Map keys must be unique \(output line 5: "name: b"\)/)
  // A computed line is placed on the line of the <%= %> that wrote it, however the output shifted.
  const computed = failure(() => renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n<% if (true) { -%>\n  name: a\n<% } -%>\n  <%= "name" %>: b\n' }))
  t.match(computed.problems[0], /^templates\/extra\.ejs:7: Map keys must be unique \(output line 5: "\\"name\\": b"\)/)
  // A block that toYaml() wrote: the line of its tag, for any of its lines.
  const block = failure(() => renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: "1"<%= toYaml({ w: "0", k: "2" }, 2) %>\n' }))
  t.match(block.problems[0], /^templates\/extra\.ejs:6: Map keys must be unique \(output line 8: "k: \\"2\\""\)/, block.problems[0] ?? '')
  // Text written as it is keeps its own line, even next to computed lines.
  const literal = failure(() => renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: <%= "ConfigMap" %>\nmetadata:\n  name: a\n  name: b\n' }))
  t.match(literal.problems[0], /^templates\/extra\.ejs:5: Map keys must be unique \(output line 5: "name: b"\)/)
})

t.test('objects without apiVersion, kind or name are refused', async (t) => {
  const err = failure(() => renderWith({ 'templates/extra.ejs': 'kind: ConfigMap\nmetadata: {}\n---\n- a list\n' }))
  t.same(err.problems, [
    'templates/extra.ejs:1: object without apiVersion, metadata.name (output line 1: "kind: ConfigMap")',
    'templates/extra.ejs:4: a document must be a map, not a list (output line 4: "- a list")',
  ], 'placed on the template\'s lines')
})

t.test('problems of several templates are all reported', async (t) => {
  const err = failure(() => renderWith({ 'templates/a.ejs': '<% fail("a") %>', 'templates/b.ejs': '<% fail("b") %>' }))
  t.equal(err.problems.length, 2)
})

t.test('empty documents are skipped', async (t) => {
  const r = renderWith({ 'templates/extra.ejs': '---\n---\n# only a comment\n---\n' })
  t.same(r.objects.map((o) => o.kind), ['Service', 'Deployment'])
})

t.test('YAML 1.1: what Kubernetes reads', async (t) => {
  const r = renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: on\n  b: 0644\n  c: 2024-01-02\n' })
  const cm = r.objects.find((o) => o.kind === 'ConfigMap') as any
  t.same(cm.data, { a: true, b: 420, c: '2024-01-02' }, 'on is a boolean and 0644 octal (as YAML 1.1 says); a date stays a string')
})

t.test('helpers', async (t) => {
  const tpl = [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: <%= fullname("cfg") %>',
    'data:',
    '  quoted: <%= quote(values.port) %>',
    '  fallback: <%= h.default(values.nothing, "fb") %>',
    '  kept: <%= h.default(values.serviceAccount.create, true) %>',
    '  digest: <%= sha256(values.size) %>',
    '  chart: <%= chart.name + "-" + chart.version %>',
    '  release: <%= release.namespace + "/" + release.name %>',
    '  yaml: <%= quote(JSON.stringify(labels())) %>',
    'inline: {<%= include("answer", { answer: 42 }) %>}',
    'block: <%= toYaml({ a: [1, { b: "on" }] }, 2) %>',
    'empty: <%= toYaml({}) %>',
    'scalar: <%= toYaml("x") %>',
    'selector: <%= selectorLabels() %>',
    'nested:',
    '<%= include("answer", { answer: 7 }, 2) %>',
  ].join('\n')
  const r = renderWith({ 'templates/extra.ejs': tpl, 'templates/_answer.ejs': 'answer: <%= ctx.answer %>\n' })
  const cm = r.objects.find((o) => o.kind === 'ConfigMap') as any
  t.equal(cm.metadata.name, 'x-cfg')
  t.same(cm.data.quoted, '11211')
  t.equal(cm.data.fallback, 'fb')
  t.equal(cm.data.kept, false, 'default() keeps false (unlike Helm)')
  t.equal(cm.data.digest, '6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b')
  t.equal(cm.data.chart, 'memcached-0.1.0')
  t.equal(cm.data.release, 'default/x')
  t.same(JSON.parse(cm.data.yaml)['app.kubernetes.io/managed-by'], 'memcached-operator')
  t.same(cm.inline, { answer: 42 }, 'a partial is template text: its output is YAML')
  t.same(cm.block, { a: [1, { b: 'on' }] }, 'toYaml keeps "on" a string')
  t.same(cm.empty, {})
  t.equal(cm.scalar, 'x')
  t.same(cm.selector, { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'x' })
  t.same(cm.nested, { answer: 7 })
})

t.test('include of an unknown partial is a template error', async (t) => {
  const err = failure(() => renderWith({ 'templates/extra.ejs': 'a: <%= include("nope") %>\n' }))
  t.match(err.problems[0], /templates\/extra\.ejs:1: include: no partial "nope"/)
})

t.test('values a template cannot write are template errors', async (t) => {
  for (const [expr, message] of [['() => 1', /cannot write a function/], ['1 / 0', /cannot write Infinity/]] as const) {
    const err = failure(() => renderWith({ 'templates/extra.ejs': `a: <%= ${expr} %>\n` }))
    t.match(err.problems[0], message)
  }
})

t.test('objects are stamped with the namespace and the standard labels, which win', async (t) => {
  const r = renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n    own: "yes"\n    app.kubernetes.io/managed-by: someone-else\n' })
  const cm = r.objects.find((o) => o.kind === 'ConfigMap')!
  t.equal(cm.metadata.namespace, 'default')
  t.same(cm.metadata.labels, {
    own: 'yes',
    'app.kubernetes.io/managed-by': 'memcached-operator',
    'app.kubernetes.io/name': 'memcached',
    'app.kubernetes.io/instance': 'x',
    'app.kubernetes.io/version': '1.6.38',
    'app.kubernetes.io/component': 'cache',
    'app.kubernetes.io/part-of': 'memcached',
  })
})

t.test('output order: ServiceAccount, ConfigMap/Secret, Service, workloads, PDB; then by name', async (t) => {
  const cm = (n: string) => `---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${n}\n`
  const r = renderWith({ 'templates/aaa.ejs': cm('zz') + cm('aa') }, { size: 3, serviceAccount: { create: true } })
  t.same(r.objects.map((o) => `${o.kind}/${o.metadata.name}`), ['ServiceAccount/x', 'ConfigMap/aa', 'ConfigMap/zz', 'Service/x', 'Deployment/x', 'PodDisruptionBudget/x'])
  t.same(r.sources, ['templates/serviceaccount.ejs', 'templates/aaa.ejs', 'templates/aaa.ejs', 'templates/service.ejs', 'templates/deployment.ejs', 'templates/poddisruptionbudget.ejs'])
})

t.test('the guard refuses other namespaces, unmanaged kinds and duplicates', async (t) => {
  const err = failure(() =>
    renderWith({
      'templates/extra.ejs': [
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: kube-system',
        'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: admin',
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: x',
      ].join('\n---\n'),
    }),
  )
  t.equal(err.kind, 'guard')
  t.same(err.problems, [
    'templates/extra.ejs: ConfigMap/elsewhere: namespace "kube-system" is not the instance\'s namespace "default"',
    'templates/extra.ejs: ClusterRole/admin: kind rbac.authorization.k8s.io/v1 ClusterRole is not one the operator manages (kinds.yaml declares v1 ServiceAccount, v1 ConfigMap, v1 Service, apps/v1 Deployment, apps/v1 StatefulSet, policy/v1 PodDisruptionBudget, networking.k8s.io/v1 NetworkPolicy, monitoring.coreos.com/v1 ServiceMonitor, monitoring.coreos.com/v1 PrometheusRule, cert-manager.io/v1 Certificate)',
    'templates/service.ejs: Service/x: rendered twice (first by templates/extra.ejs)',
  ], 'each names its template, and a duplicate both')
})

t.test('the guard refuses invalid names and labels', async (t) => {
  const err = failure(() =>
    renderWith({ 'templates/extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n  labels:\n    "bad key!": v\n    ok: "not valid!"\n' }),
  )
  t.same(err.problems, [
    'templates/extra.ejs: ConfigMap/Bad_Name: invalid name: a DNS subdomain is required',
    'templates/extra.ejs: ConfigMap/Bad_Name: invalid label key "bad key!"',
    'templates/extra.ejs: ConfigMap/Bad_Name: invalid value of label "ok": "not valid!"',
  ])
})

t.test('the guard refuses annotation keys and pod-template labels the API server would refuse (podAnnotations from a spec)', async (t) => {
  const err = failure(() => renderWith({}, { size: 1, podAnnotations: { 'x\ny': 'v', 'Example.COM/Fine': 'v', ['a'.repeat(64)]: 'v' }, podLabels: { 'ok/': 'v' } }))
  t.equal(err.kind, 'guard')
  t.same(err.problems, [
    'templates/deployment.ejs: Deployment/x: invalid label key "ok/" (pod template)',
    'templates/deployment.ejs: Deployment/x: invalid annotation key "x\\ny" (pod template)',
    `templates/deployment.ejs: Deployment/x: invalid annotation key "${'a'.repeat(64)}" (pod template)`,
  ], 'annotation keys are checked lower-cased, as ValidateAnnotations does')
})

t.test('chart loading errors name the file', async (t) => {
  t.match(failure(() => loadChart(chartWith({ 'Chart.yaml': 'name: x\n' }))).problems[0], /Chart\.yaml: name and version are required/)
  t.match(failure(() => loadChart(chartWith({ 'values.yaml': 'a: [\n' }))).problems[0], /values\.yaml:\d+: /)
  t.match(failure(() => loadChart(chartWith({ 'values.yaml': '- 1\n' }))).problems[0], /values\.yaml: must be a map/)
  t.match(failure(() => loadChart(chartWith({ 'values.schema.json': '{' }))).problems[0], /values\.schema\.json: /)
  t.match(failure(() => loadChart(chartWith({ 'values.schema.json': '{"type": "nonsense"}' }))).problems[0], /values\.schema\.json: invalid schema/)
  t.match(failure(() => loadChart(chartWith({ 'values.schema.json': null }))).problems[0], /cannot read values\.schema\.json: ENOENT/)
})

t.test('a loaded chart is cached; reload reads it again', async (t) => {
  const dir = chartWith({})
  const first = loadChart(dir)
  t.equal(loadChart(dir), first, 'the same chart object')
  const reloaded = loadChart(dir, true)
  t.not(reloaded, first, 'read again')
  t.equal(loadChart(dir), reloaded, 'and cached again')
})
