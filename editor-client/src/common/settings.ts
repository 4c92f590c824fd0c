/**
 * The `aiderLsp` settings as the server reads them. The server's initializationOptions are the
 * same flat object as the configuration section, minus the settings only this extension reads
 * (`server.*`). The API key never lives in settings.json: it comes from SecretStorage.
 */

export const SECTION = 'aiderLsp';

/** The API key's name in VS Code's SecretStorage. */
export const API_KEY_SECRET = 'aiderLsp.apiKey';

/** Settings the server reads (docs/configuration.md, "The settings"), in the order that table lists them. */
export const SERVER_SETTING_KEYS = [
    'model',
    'baseUrl',
    'outputMode',
    'aiderModel',
    'aiderServer',
    'aiderMapTokens',
    'testCommand',
    'testShell',
    'pythonInterpreter',
    'maxRetries',
    'isolation',
    'attempts',
    'chooseAttempt',
    'attemptModels',
    'maxIsolatedRuns',
    'analyseGreenTests',
    'testsBeforeFirstEdit',
    'failingTestsFirst',
    'timeouts',
    'maxOutputTokens',
    'contextExcludes',
    'contextRerank',
    'contextRerankTopN',
    'contextHistoryCommits',
    'contextIndexPath',
    'secretPatterns',
    'history',
    'budget',
    'maxOpenFolders',
] as const;
type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];

/** A JSON value as it may travel in initializationOptions. */
type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

type InitializationOptions = Partial<Record<ServerSettingKey | 'apiKey', JsonValue>>;

/** Reads one setting of the section; `undefined` when it has no value. */
type SettingReader = (key: string) => unknown;

function toJson(value: unknown): JsonValue | undefined {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') {
        return value;
    }
    if (typeof value === 'number') {
        return Number.isFinite(value) ? value : undefined;
    }
    if (Array.isArray(value)) {
        return value.map((item) => toJson(item) ?? null);
    }
    if (typeof value === 'object' && value !== undefined) {
        const out: { [key: string]: JsonValue } = {};
        for (const [key, item] of Object.entries(value)) {
            const json = toJson(item);
            if (json !== undefined) {
                out[key] = json;
            }
        }
        return out;
    }
    return undefined;
}

/**
 * The server's settings from the editor's: unset, null and empty-string values are left out so
 * the server's own defaults and the AIDER_LSP_* environment apply.
 */
export function initializationOptions(read: SettingReader, apiKey?: string): InitializationOptions {
    const options: InitializationOptions = {};
    for (const key of SERVER_SETTING_KEYS) {
        const value = toJson(read(key));
        if (value === undefined || value === null || value === '') {
            continue;
        }
        options[key] = value;
    }
    if (apiKey) {
        options.apiKey = apiKey;
    }
    return options;
}

/**
 * The server's environment additions: the key from SecretStorage, never from settings.json, and
 * the Python extension's interpreter (as the environment, so `aiderLsp.pythonInterpreter` set
 * by the user still wins over it).
 */
export function serverEnvironment(base: NodeJS.ProcessEnv, apiKey?: string, pythonInterpreter?: string): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...base };
    if (apiKey) {
        env.AIDER_LSP_API_KEY = apiKey;
    }
    if (pythonInterpreter) {
        env.AIDER_LSP_PYTHON_INTERPRETER = pythonInterpreter;
    }
    return env;
}
