/**
 * What operator/render/lazy-require.ts becomes inside the start-up snapshot, which can load no
 * module from disk: the modules the snapshot carries, and {@link ModuleUnavailable} for the rest
 * (ajv's compiler, needed only for a chart schema that has no cached validator). The snapshot's
 * entry answers that error by running the command from the sources instead.
 */
import equal from 'ajv/dist/runtime/equal.js'
import ucs2length from 'ajv/dist/runtime/ucs2length.js'
import uri from 'ajv/dist/runtime/uri.js'
import ValidationError from 'ajv/dist/runtime/validation_error.js'
import ajvPackage from 'ajv/package.json' with { type: 'json' }
import { ModuleUnavailable } from '../render/errors.ts'

/**
 * A CommonJS module's `exports.default`: what the default import is in the bundle (esbuild honours
 * `__esModule`), and a property of it under Node (where the default import is `module.exports`).
 */
const cjsDefault = (imported: unknown): unknown => ((imported as { __esModule?: boolean }).__esModule ? (imported as { default: unknown }).default : imported)

// The shapes ajv's standalone validators require: `require("ajv/dist/runtime/x").default`.
const preloaded: Record<string, unknown> = {
  'ajv/package.json': { version: ajvPackage.version },
  'ajv/dist/runtime/equal': { default: cjsDefault(equal) },
  'ajv/dist/runtime/ucs2length': { default: cjsDefault(ucs2length) },
  'ajv/dist/runtime/uri': { default: cjsDefault(uri) },
  'ajv/dist/runtime/validation_error': { default: cjsDefault(ValidationError) },
}

/** A preloaded module or a built-in one; {@link ModuleUnavailable} for any other (the entry then runs the command from the sources). */
export function lazyRequire(id: string): unknown {
  if (id.startsWith('node:')) return process.getBuiltinModule(id)
  if (Object.hasOwn(preloaded, id)) return preloaded[id]
  throw new ModuleUnavailable(id)
}
