import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("neogate")
launch_gradio_widget(module)
