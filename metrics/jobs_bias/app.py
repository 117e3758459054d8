import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("jobs_bias")
launch_gradio_widget(module)
