// 简体中文：渠道类型的名称与设置（它们随 provider 注册而增加，不属于 en.ts 的固定键）。
/**
 * 渠道类型及其设置（src/channels/providers 中各 provider 的 label 与 configFields）的中文：键为类型名，或「类型名.设置名」。
 * 英文界面直接显示服务器给出的英文 label；这里缺少的项在中文界面也显示英文（test/unit/console-provider-words.test.ts 检查每个已注册的 provider 都有）。
 */
export const zhCNProviders: Record<string, string> = {
  openai: 'OpenAI 兼容',
  'openai.path': '接口路径（默认 /v1/embeddings）',
  'openai.headers': '额外请求头（JSON 对象）',
  azure: 'Azure OpenAI',
  'azure.api_version': 'API 版本（v1 API 填 "v1"）',
  gemini: 'Google Gemini',
  'gemini.api_version': 'API 版本',
  'gemini.task_type': '任务类型（默认不设）',
  cohere: 'Cohere',
  'cohere.input_type': '输入类型（默认 search_document）',
  'cohere.truncate': '截断过长文本（NONE、START 或 END）',
  voyage: 'Voyage AI',
  'voyage.input_type': '输入类型（query 或 document；默认不设）',
  'voyage.truncation': '截断过长文本（true 或 false；默认 true）',
  bedrock: 'AWS Bedrock',
  'bedrock.region': 'AWS 区域',
  'bedrock.input_type': 'Cohere 输入类型（默认 search_document）',
  'bedrock.truncate': 'Cohere 截断方式（NONE、START、END；v4：LEFT、RIGHT）',
  'bedrock.normalize': 'Titan v2 归一化（默认 true）',
  ollama: 'Ollama',
  'ollama.truncate': '超出上下文的文本：截断（true，默认）或拒绝（false）',
  'ollama.keep_alive': '模型保持加载的时长（默认 5m）',
  tei: 'Hugging Face TEI',
  'tei.truncate': '超出模型长度的文本：截断（true）或拒绝',
  'tei.normalize': '向量归一化（默认 true）',
  'tei.prompt_name': '提示名（取自模型的 prompts）',
  'tei.token_ids': '以 token id 发送（模型须使用 cl100k_base）',
};
