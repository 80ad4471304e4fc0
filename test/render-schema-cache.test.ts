/** The on-disk cache of compiled validators: its files are run as code, so only a directory no one else can write is used. */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { compileValuesSchema, type SchemaNode } from '../operator/render/schema.ts'

const dir = mkdtempSync(join(tmpdir(), 'mc-validator-cache-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const saved = process.env.MEMCACHED_OPERATOR_CACHE_DIR
t.teardown(() => {
  if (saved === undefined) delete process.env.MEMCACHED_OPERATOR_CACHE_DIR
  else process.env.MEMCACHED_OPERATOR_CACHE_DIR = saved
})
const schema: SchemaNode = { type: 'object', properties: { size: { type: 'integer', minimum: 0 } }, required: ['size'] }

/** Replaces the code of a cached validator, keeping the first line: the key it was compiled for. */
function plant(file: string, code: string): void {
  writeFileSync(file, `${readFileSync(file, 'utf8').split('\n')[0]}\n${code}`)
}

t.test('a directory of our own, created 0700: the validator is written 0600 and used again', async (t) => {
  const own = join(dir, 'own')
  process.env.MEMCACHED_OPERATOR_CACHE_DIR = own
  t.same(compileValuesSchema(schema)({ size: -1 }), ['spec.size: must be >= 0 (got -1)'])
  t.equal(statSync(own).mode & 0o777, 0o700)
  const [file] = readdirSync(own)
  t.match(file, /^values-[0-9a-f]{8}\.cjs$/)
  t.equal(statSync(join(own, file!)).mode & 0o777, 0o600)
  t.match(readFileSync(join(own, file!), 'utf8'), /^\/\/ "\d+\.\d+\.\d+\\u0000\{\\"type\\":\\"object\\",.*\}"\n/, 'it starts with the key it was compiled for')
  // What is cached is what runs: a file changed in the trusted directory is used as it is.
  plant(join(own, file!), 'module.exports = function validate() { return true }')
  t.same(compileValuesSchema(schema)({ size: -1 }), [], 'the cached file was run')
})

t.test('a cached file compiled for another key (two keys share a name) is not used', async (t) => {
  const cache = join(dir, 'collision')
  process.env.MEMCACHED_OPERATOR_CACHE_DIR = cache
  compileValuesSchema(schema)
  const [file] = readdirSync(cache)
  const other = { ...schema, properties: { size: { type: 'integer', minimum: 5 } } }
  writeFileSync(join(cache, file!), `// ${JSON.stringify(`8.0.0\0${JSON.stringify(other)}`)}\nmodule.exports = function validate() { return true }`)
  t.same(compileValuesSchema(schema)({ size: -1 }), ['spec.size: must be >= 0 (got -1)'], 'compiled afresh instead')
  t.match(readFileSync(join(cache, file!), 'utf8'), /^\/\/ .*\\"minimum\\":0\}/, 'and cached under its own key again')
  t.same(compileValuesSchema(schema)({ size: 3 }), [])
})

/** A cache directory of `mode` whose validator for `schema` has been replaced by `planted`; returns what validating `{ size: -1 }` gives. */
function withPlanted(name: string, mode: number, planted: string): string[] {
  const cache = join(dir, name)
  process.env.MEMCACHED_OPERATOR_CACHE_DIR = cache
  compileValuesSchema(schema)
  chmodSync(cache, mode)
  const [file] = readdirSync(cache)
  plant(join(cache, file!), planted)
  return compileValuesSchema(schema)({ size: -1 })
}

t.test("a directory of the user's own group may be group-writable (umask 002 systems)", async (t) => {
  t.same(withPlanted('grouped', 0o770, 'module.exports = function validate() { return true }'), [], 'the cached file was run')
})

t.test('a directory others can write to is not used: a validator planted there never runs', async (t) => {
  const problems = withPlanted('shared', 0o777, 'globalThis.planted = true; module.exports = function validate() { return true }')
  t.same(problems, ['spec.size: must be >= 0 (got -1)'], 'compiled afresh instead')
  t.notOk((globalThis as { planted?: boolean }).planted, 'the planted code did not run')
})
