-- Headless Neovim as a real atenlint user: open a model, wait for the squiggles,
-- apply the "ignore on this line" quick fix with Neovim's own code-action command,
-- save, and check the finding is gone. Writes a JSON verdict to $ATENLINT_VERDICT.
local verdict_path = os.getenv("ATENLINT_VERDICT")
local file = os.getenv("ATENLINT_FILE")
local python = os.getenv("ATENLINT_PYTHON")
local op = os.getenv("ATENLINT_OP") -- the model's first finding's op, from the installed torch
local verdict = { steps = {} }

local function finish(ok, message)
  verdict.ok = ok
  verdict.message = message
  local handle = io.open(verdict_path, "w")
  handle:write(vim.json.encode(verdict))
  handle:close()
  vim.cmd(ok and "qall!" or "cquit 1")
end

vim.cmd("edit " .. file)
local bufnr = vim.api.nvim_get_current_buf()
vim.lsp.start({
  name = "atenlint",
  cmd = { python, "-m", "atenlint", "serve" },
  root_dir = vim.fs.dirname(file),
}, { bufnr = bufnr })

local function atenlint_diagnostics()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == "atenlint" then table.insert(out, d) end
  end
  return out
end

if not vim.wait(120000, function() return #atenlint_diagnostics() >= 2 end, 100) then
  return finish(false, "no diagnostics arrived")
end
local before = atenlint_diagnostics()
table.insert(verdict.steps, { diagnostics = #before })

local take
for _, d in ipairs(before) do
  if d.message:find(op, 1, true) then take = d end
end
if not take then return finish(false, "no finding of " .. op) end
vim.api.nvim_win_set_cursor(0, { take.lnum + 1, take.col })

vim.lsp.buf.code_action({
  context = { only = { "quickfix" }, diagnostics = { take.user_data and take.user_data.lsp or {} } },
  filter = function(action) return action.title:find("on this line", 1, true) ~= nil end,
  apply = true,
})
if not vim.wait(20000, function()
  return vim.api.nvim_buf_get_lines(bufnr, take.lnum, take.lnum + 1, false)[1]:find("atenlint: ignore", 1, true)
end, 100) then
  return finish(false, "the quick fix did not change the line")
end
vim.cmd("write")
if not vim.wait(120000, function()
  local now = atenlint_diagnostics()
  for _, d in ipairs(now) do
    if d.message:find(op, 1, true) then return false end
  end
  return #now == #before - 1
end, 100) then
  return finish(false, "the finding did not clear after save")
end
table.insert(verdict.steps, { diagnostics = #atenlint_diagnostics() })
finish(true, "quick fix applied and the re-check is clean")
