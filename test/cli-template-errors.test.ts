/**
 * Template errors say where: an unclosed tag and a JavaScript syntax error give their line and
 * the lines around it, a refused or duplicate object names its template(s), a template whose
 * output is not YAML gives one error (not one per later line), on the template's line where it can, a bad default of values.yaml is
 * blamed on values.yaml, and lint says a problem of the chart once.
 */
import { join, resolve } from 'node:path'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { readFileSync } from 'node:fs'

const root = resolve(import.meta.dirname, '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')

async function render(files: Record<string, string>, command = 'render') {
  const io = captureIO()
  const chart = chartWith(files)
  const code = await runCli(command === 'render' ? ['render', '--chart', chart, '-f', sample] : ['lint', '--chart', chart], io)
  return { code, out: io.out(), err: io.err() }
}

const cm = (rest: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n${rest}`

t.test('an unclosed tag and a syntax error: the line, and the lines around it', async (t) => {
  const unclosed = await render({ 'templates/cm.ejs': cm('  name: <%= fullname()\ndata: {}\n') })
  t.equal(unclosed.code, 1)
  t.match(unclosed.err, /templates\/cm\.ejs:4: Could not find matching close tag for "<%="\.\n(.*\n)*\s+>> 4\|   name: <%= fullname\(\)\n/)
  const syntax = await render({ 'templates/cm.ejs': cm('  name: <%= fullname( ) ) %>\n') })
  t.equal(syntax.code, 1)
  t.match(syntax.err, /templates\/cm\.ejs:4: Unexpected token '\)'\n(.*\n)*\s+>> 4\|   name: <%= fullname\( \) \) %>\n/)
})

t.test('a refused or duplicate object names its template, and a duplicate both', async (t) => {
  const dup = await render({ 'templates/svc2.ejs': 'apiVersion: v1\nkind: Service\nmetadata:\n  name: <%= fullname() %>\nspec: {ports: [{port: 1}]}\n' })
  t.equal(dup.code, 1)
  t.match(dup.err, /templates\/svc2\.ejs: Service\/memcached-sample: rendered twice \(first by templates\/service\.ejs\)|templates\/service\.ejs: Service\/memcached-sample: rendered twice \(first by templates\/svc2\.ejs\)/)
  const ns = await render({ 'templates/cm.ejs': cm('  name: x\n  namespace: kube-system\n') })
  t.match(ns.err, /templates\/cm\.ejs: ConfigMap\/x: namespace "kube-system" is not the instance's namespace "default"/)
})

t.test('a template whose output is not YAML: one error, not one per later line', async (t) => {
  const r = await render({ 'templates/cm.ejs': cm('  name: a\n    bad: x\n  labels: {}\ndata:\n  a: b\n  c: d\n') })
  t.equal(r.code, 1)
  t.equal(r.err.split('\n').filter((l) => l.includes('templates/cm.ejs')).length, 1, r.err)
  t.notMatch(r.err, /at line \d+, column \d+/, 'the place is given once')
  // Placed on the template's own line when the text is written there as it is.
  const shifted = await render({ 'templates/cm.ejs': 'apiVersion: v1\nkind: ConfigMap\n<% if (true) { -%>\nmetadata:\n<% } -%>\n  name: a\n    bad: x\n' })
  t.match(shifted.err, /templates\/cm\.ejs:6: Nested mappings are not allowed in compact mappings \(output line 4: "name: a"\)/)
})

t.test('a bad default of the chart is blamed on values.yaml; lint says a problem of the chart once', async (t) => {
  const values = readFileSync(join(root, 'charts/memcached/values.yaml'), 'utf8').replace(/^memoryMB: 64$/m, 'memoryMB: lots')
  const r = await render({ 'values.yaml': values })
  t.equal(r.code, 1)
  t.match(r.err, /Memcached default\/memcached-sample: values\.yaml: memoryMB: must be integer \(got "lots"\) \(a default of the chart: neither the spec nor an override sets memoryMB\)/)
  const lint = await render({ 'values.yaml': values }, 'lint')
  t.equal(lint.code, 1)
  t.match(lint.err, /: 1 problem\n  - [^\n]*: values\.yaml: memoryMB: must be integer/, "once, with the instances that inherit the default")
})
