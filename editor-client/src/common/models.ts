/**
 * Aider's model list as the "Select Model…" picker shows it: each model with its provider, and
 * whether the provider's key is known. Pure, so it is tested without VS Code.
 */
import type { TaskResult } from '../protocol';
import { list, str } from '../wire';

/** A model of Aider's list: its litellm name (`anthropic/claude-sonnet-4-5`) and provider. */
export interface ModelChoice {
    name: string;
    provider: string;
}

/** The key variables of the providers that need one (server providers.py; Aider reads the same). */
const KEY_VARIABLES: Record<string, readonly string[]> = {
    openai: ['OPENAI_API_KEY'],
    anthropic: ['ANTHROPIC_API_KEY'],
    gemini: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    groq: ['GROQ_API_KEY'],
    mistral: ['MISTRAL_API_KEY'],
    deepseek: ['DEEPSEEK_API_KEY'],
    openrouter: ['OPENROUTER_API_KEY'],
    cohere: ['COHERE_API_KEY', 'CO_API_KEY'],
    xai: ['XAI_API_KEY'],
};

/** Aider names OpenAI's own models without a prefix (`gpt-4.1`, `o3-mini`). */
export function providerOf(name: string): string {
    const slash = name.indexOf('/');
    return slash > 0 ? name.slice(0, slash) : 'openai';
}

/** The models of a listModels answer (`parsedContent`, else one per line of `content`), sorted. */
export function modelChoices(result: TaskResult): ModelChoice[] {
    const listed = list(str)(result.parsedContent) ?? result.content.split('\n');
    const names = [...new Set(listed.map((item) => item.trim()))];
    return names.filter((name) => name !== '').sort().map((name) => ({ name, provider: providerOf(name) }));
}

/**
 * The key variable a model's provider needs and that is missing, or undefined when the key is
 * there (in the environment, or the key of "Set API Key") or the provider needs none (ollama…).
 */
export function missingKey(provider: string, env: Readonly<Record<string, string | undefined>>, storedKey: boolean): string | undefined {
    const variables = KEY_VARIABLES[provider];
    if (variables === undefined || storedKey || variables.some((name) => (env[name] ?? '') !== '')) {
        return undefined;
    }
    return variables[0];
}

/** Aider's (litellm's) provider prefixes that pydantic-ai spells otherwise (server: aider/launch.py maps them back). */
const PLANNING_PROVIDERS: Record<string, string> = {
    openai: 'openai',
    anthropic: 'anthropic',
    gemini: 'google-gla',
    vertex_ai: 'google-vertex',
    groq: 'groq',
    mistral: 'mistral',
    deepseek: 'deepseek',
    openrouter: 'openrouter',
    cohere: 'cohere',
    ollama: 'ollama',
    ollama_chat: 'ollama',
};

/**
 * The planning model id (`aiderLsp.model`, pydantic-ai's `provider:name`) of a model of Aider's
 * list, or undefined when its provider is not one the planner speaks to.
 */
export function planningModelOf(aiderName: string): string | undefined {
    const slash = aiderName.indexOf('/');
    const provider = PLANNING_PROVIDERS[providerOf(aiderName)];
    const name = slash > 0 ? aiderName.slice(slash + 1) : aiderName;
    return provider === undefined || name === '' ? undefined : `${provider}:${name}`;
}
