/**
 * lint and render judge every rendered object offline as a 1.34 API server would: against
 * upstream's schema of its kind (sigs.k8s.io/json decode.go's type errors, undeclared fields) and
 * then its validation (pkg/apis/core/validation/validation.go), naming the template and the object.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { objectProblems, renderedProblems } from '../operator/cli/check-objects.ts'
import { SAMPLES_DIR } from '../operator/cli/lint.ts'
import { runCli } from '../operator/cli/program.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'

const sample = join(SAMPLES_DIR, 'cache_v1alpha1_memcached.yaml')
const run = async (args: string[]) => {
  const io = captureIO()
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}

const service = readFileSync(new URL('../charts/memcached/templates/service.ejs', import.meta.url), 'utf8')
const typos = chartWith({
  'templates/service.ejs': service.replace('  type: ClusterIP', '  tpye: ClusterIP').replace('      protocol: TCP\n', '      protocol: TCPX\n'),
  'templates/configmap-extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: <%= fullname("extra") %>\ndata:\n  size: <%= values.size %>\n',
})

t.test('lint refuses what a cluster refuses: an undeclared field, a protocol TCPX, an integer in a ConfigMap\'s data; each named by template and object, once', async (t) => {
  const r = await run(['lint', '--chart', typos])
  t.equal(r.code, 1)
  t.match(r.err, '  - every instance: templates/service.ejs: Service/lint: spec.tpye: field not declared in schema')
  t.match(r.err, '  - every instance: templates/configmap-extra.ejs: ConfigMap/lint-extra: data.size: json: cannot unmarshal number into Go struct field ConfigMap.data of type string')
  t.match(r.err, /^lint: .*: 2 problems\n/, 'a problem every instance shares is reported once')
  t.equal(r.out, '')
  // Without the undeclared field, validation speaks: the protocol.
  const protocol = chartWith({ 'templates/service.ejs': service.replace('      protocol: TCP\n', '      protocol: TCPX\n') })
  const p = await run(['lint', '--chart', protocol])
  t.equal(p.code, 1)
  t.match(p.err, 'templates/service.ejs: Service/lint: spec.ports[0].protocol: Unsupported value: "TCPX": supported values: "SCTP", "TCP", "UDP"')
})

t.test('render refuses the same objects, exit 1, nothing on stdout, each problem naming the CR, the template and the object', async (t) => {
  const r = await run(['render', '--chart', typos, '-f', sample])
  t.equal(r.code, 1)
  t.equal(r.out, '')
  t.match(r.err, 'Memcached default/memcached-sample: templates/service.ejs: Service/memcached-sample: spec.tpye: field not declared in schema')
  t.match(r.err, 'Memcached default/memcached-sample: templates/configmap-extra.ejs: ConfigMap/memcached-sample-extra: data.size: json: cannot unmarshal number into Go struct field ConfigMap.data of type string')
  const ok = await run(['render', '-f', sample])
  t.equal(ok.code, 0, ok.err)
})

t.test('objectProblems: decoding first (types, quantities), then undeclared fields, then validation after the server\'s defaulting; kinds without a schema pass', async (t) => {
  const deploy = (container: Record<string, unknown>, spec: Record<string, unknown> = {}) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    spec: { selector: { matchLabels: { app: 'd' } }, template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'i', ...container }] } }, ...spec },
  })
  t.same(objectProblems(deploy({})), [])
  t.same(objectProblems(deploy({ resources: { limits: { memory: 'lots' } } })), ["spec.template.spec.containers[0].resources.limits.memory: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"])
  t.same(objectProblems(deploy({ env: [{ name: 'A', value: 1 }] })), ['spec.template.spec.containers[0].env[0].value: json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string'])
  t.same(objectProblems(deploy({ imagee: 'x', resources: { limitz: {} } })), ['spec.template.spec.containers[0].imagee: field not declared in schema', 'spec.template.spec.containers[0].resources.limitz: field not declared in schema'])
  t.same(objectProblems(deploy({}, { selector: { matchLabels: { app: 'other' } } })), ['spec.template.metadata.labels: Invalid value: {"app":"d"}: `selector` does not match template `labels`'])
  t.same(objectProblems({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { selector: { a: 'b' }, ports: [{ port: 80 }] } }), [], 'defaulted (protocol, targetPort) before validation')
  t.same(objectProblems({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { a: 'x' } }), [])
  t.same(objectProblems({ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: 'm' }, spec: { anything: 1 } }), [], 'no schema offline')
  t.same(objectProblems({ kind: 'ConfigMap', data: { a: 1 } }), [], 'no apiVersion: no kind to judge by')
  t.same(objectProblems({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'eA==' }, stringData: { username: 'u' }, type: 'kubernetes.io/basic-auth' }), [], 'stringData merged into data first, as the server does')
  t.same(objectProblems({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'eA==' }, type: 'kubernetes.io/basic-auth' }), ['data[username]: Required value', 'data[password]: Required value'])
  t.same(renderedProblems([null, { apiVersion: 'v1', kind: 'ConfigMap', data: { a: 1 } }], ['x.ejs', 'templates/cm.ejs']), ['templates/cm.ejs: ConfigMap/: data.a: json: cannot unmarshal number into Go struct field ConfigMap.data of type string'])
})
