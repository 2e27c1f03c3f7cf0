#pragma once
#include "gates/verdict.hpp"
